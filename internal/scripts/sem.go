package scripts

import (
	"context"
	"strconv"

	"github.com/go-redisync/redisync/internal/layout"
)

// The scripts of Semaphore. Its waiters' heartbeats use FairHeartbeat.
var (
	SemAcquire     = loadWith("sem_acquire", "sem_lib")
	SemRelease     = loadWith("sem_release", "sem_lib")
	SemRenew       = loadWith("sem_renew", "sem_lib")
	SemForceUnlock = loadWith("sem_force_unlock", "sem_lib")
)

// A SemVersion is what a Semaphore call checks and writes: the version of
// the holder's entry the caller last saw confirmed (0 for a term's first
// call), and the version this call writes.
type SemVersion struct {
	Expect, Write uint64
}

// args returns v as the scripts take it.
func (v SemVersion) args() (expect, write string) {
	return strconv.FormatUint(v.Expect, 10), strconv.FormatUint(v.Write, 10)
}

// semKeys returns the KEYS of the Semaphore calls of holder at l: its keys,
// with the holder's latch for the prefix of the latches.
func semKeys(l *layout.Sem, holder string) []string {
	keys := l.Keys()
	keys[7] = latchKey(l.Latch, holder, "")
	return keys
}

// AcquireSem runs sem_acquire on the Semaphore at l, whose handle has size
// permits: holder h.Field goes from h.Count to h.Count+n permits in queue
// order, or its waiter queues (keeps its place). A Mismatch reply carries the
// size Redis has.
func (r *Runner) AcquireSem(ctx context.Context, l *layout.Sem, size string, h Hold, n int, v SemVersion) (Reply, error) {
	expect, write := v.args()
	return r.pair(ctx, Call{
		Script: SemAcquire,
		Keys:   semKeys(l, h.Field),
		Args: []string{size, h.Field, strconv.Itoa(n), strconv.Itoa(h.Count + n), h.LeaseMS, h.Waiter, ms(h.HeartbeatMS),
			r.publish, expect, write},
	})
}

// ReleaseSem runs sem_release: holder rel.Field keeps rel.To permits (0 ends
// its term, leaving the term's latch for rel.Latch milliseconds if set), the
// waiters whose requests fit now are woken, and rel.Waiter, if set, leaves
// the queue. (rel.From is not sent: the version is the check.)
func (r *Runner) ReleaseSem(ctx context.Context, l *layout.Sem, rel *Release, v SemVersion) (Released, error) {
	expect, write := v.args()
	return r.queueReleased(ctx, Call{
		Script: SemRelease,
		Keys:   semKeys(l, rel.Field),
		Args:   []string{rel.Field, strconv.Itoa(rel.To), rel.Waiter, r.publish, expect, write, ms(rel.Latch)},
	})
}

// ForceUnlockSem runs sem_force_unlock: every permit of the Semaphore at l
// is taken back and the queued requests that fit are woken. It returns the
// holders whose permits it took.
func (r *Runner) ForceUnlockSem(ctx context.Context, l *layout.Sem) ([]string, error) {
	return r.fields(ctx, Call{Script: SemForceUnlock, Keys: l.Keys()[:7], Args: []string{r.publish}})
}

// ms is a duration argument in milliseconds, "0" when unset.
func ms(s string) string {
	if s == "" {
		return "0"
	}
	return s
}
