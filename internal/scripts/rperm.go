package scripts

import (
	"context"

	"github.com/go-redisync/redisync/internal/layout"
)

// The scripts of a semaphore in Redisson's RPermitExpirableSemaphore layout.
var (
	RPermAcquire   = loadWith("rperm_acquire", "queue_lib", "rperm_lib")
	RPermRelease   = loadWith("rperm_release", "queue_lib", "rperm_lib")
	RPermUndo      = loadWith("rperm_undo", "rperm_lib")
	RPermRenew     = loadWith("rperm_renew", "queue_lib", "rperm_lib")
	RPermAvailable = loadWith("rperm_available", "queue_lib", "rperm_lib")
)

// rpermKeys returns the keys of a call on the semaphore at l; with call set,
// its latch is the fourth.
func rpermKeys(l *layout.RPermit, call string) []string {
	if call == "" {
		return []string{l.Key, l.Leases, l.Channel}
	}
	return []string{l.Key, l.Leases, l.Channel, l.Latch + ":" + call}
}

// AcquireRPerm runs rperm_acquire for the call whose latch is l.Latch + ":"
// + call: it takes a permit per id, each leased for leaseMS ("-1": no lease),
// setting the free count to size when absent.
func (r *Runner) AcquireRPerm(ctx context.Context, l *layout.RPermit, call, size, leaseMS, latchMS string, ids []string) (Reply, error) {
	return r.pair(ctx, Call{
		Script: RPermAcquire,
		Keys:   rpermKeys(l, call),
		Args:   append([]string{size, leaseMS, latchMS, r.publish}, ids...),
	})
}

// ReleaseRPerm runs rperm_release for the release whose latch is l.Latch +
// ":" + call: the permits go back to the free count. members holds two per
// permit, either of which may be recorded (its id's bytes, its id as text). It returns how
// many were taken with their lease running (held) and how many with their
// lease ended (ended); a repeat of the release answers the same and gives
// nothing back twice.
func (r *Runner) ReleaseRPerm(ctx context.Context, l *layout.RPermit, call, latchMS string, members []string) (held, ended int64, err error) {
	c := Call{Script: RPermRelease, Keys: rpermKeys(l, call), Args: append([]string{r.publish, latchMS}, members...)}
	c.Retryable = true
	return r.twoInts(ctx, c)
}

// UndoRPerm runs rperm_undo for the call whose latch is l.Latch + ":" +
// call: what its attempts took of ids goes back, and its late copies take
// nothing; it returns how many permits went back.
func (r *Runner) UndoRPerm(ctx context.Context, l *layout.RPermit, call, latchMS string, ids []string) (int64, error) {
	c := Call{Script: RPermUndo, Keys: rpermKeys(l, call), Args: append([]string{r.publish, latchMS}, ids...)}
	c.Retryable = true
	return r.integer(ctx, c)
}

// RenewRPerm runs rperm_renew: the lease of the permit recorded as bytes or
// as text ends leaseMS from now ("-1": never). It reports whether the
// permit was still taken.
func (r *Runner) RenewRPerm(ctx context.Context, l *layout.RPermit, bytes, text, leaseMS string) (bool, error) {
	c := Call{Script: RPermRenew, Keys: rpermKeys(l, ""), Args: []string{r.publish, leaseMS, bytes, text}}
	c.Retryable = true // a repeat renews from its own now
	n, err := r.integer(ctx, c)
	return n == 1, err
}

// AvailableRPerm runs rperm_available: the free permits after ended leases
// are given back, or -1 when the count is not set.
func (r *Runner) AvailableRPerm(ctx context.Context, l *layout.RPermit) (int64, error) {
	c := Call{Script: RPermAvailable, Keys: rpermKeys(l, ""), Args: []string{r.publish}}
	c.Retryable = true
	return r.integer(ctx, c)
}
