package redisync

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-redisync/redisync/internal/ctxlock"
	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/scripts"
	"github.com/go-redisync/redisync/internal/state"
)

// A Semaphore bounds access to a resource shared by every process that uses
// the same name on the same Redis: callers acquire and release weights
// (permits) out of a fixed size, as with [golang.org/x/sync/semaphore.Weighted],
// whose behaviour it follows. Waiters are served in FIFO order across
// processes, so a large request is not starved by a stream of small ones.
//
// Permits are held under a lease per handle (see [WithWatchdogTimeout] and
// [WithLease]): a crashed holder's permits come back, and waiters are woken,
// when its lease lapses; [Semaphore.Done] and [Semaphore.Err] report the loss
// of a handle's permits. Queued waiters prove they are alive by heartbeat, as
// a [FairMutex]'s do. The size is recorded in Redis by the first use of the
// name (delete redisync_sem_size:{name} to change it); a handle made with
// another size fails to acquire.
//
// A handle is one holder: the permits acquired through it, by any goroutine,
// are counted together and released through it. A Semaphore must not be
// copied after first use.
type Semaphore struct {
	handle
	size    int64
	sizeArg string
	l       layout.Sem // its keys and channel

	// mu guards what Redis last confirmed of the handle's entry (holder id,
	// permits, version); pending records a call of unknown outcome since.
	mu      ctxlock.Mutex
	field   string
	permits int
	version uint64
	pending bool
}

// MaxSemaphoreSize is the largest size of a [Semaphore], a
// [CountingSemaphore] or an [ExpirableSemaphore], and so the largest weight
// a call can acquire: 2^53-1 (math.MaxInt where int has 32 bits). The
// scripts in Redis count permits as Lua numbers, which are doubles and hold
// every integer exactly only up to 2^53. The constructors panic on a larger
// size.
const MaxSemaphoreSize = min(1<<53-1, math.MaxInt)

// NewSemaphore returns a handle on the semaphore called name, with the given
// maximum combined weight for concurrent access. Names, options and panics
// are as for [Client.NewMutex]; it also panics if size is negative or above
// [MaxSemaphoreSize].
func (c *Client) NewSemaphore(name string, size int64, opts ...Option) *Semaphore {
	c.single("NewSemaphore")
	if size < 0 {
		panic("redisync: semaphore size < 0")
	}
	if size > MaxSemaphoreSize {
		panic("redisync: semaphore size > MaxSemaphoreSize")
	}
	s := &Semaphore{size: size, sizeArg: strconv.FormatInt(size, 10), l: layout.SemOf(name)}
	c.initHandle(&s.handle, PrimitiveSemaphore, name, opts)
	s.key = s.l.Holders
	return s
}

// Acquire acquires the semaphore with a weight of n, blocking until resources
// are available or ctx is done. On success, returns nil. On failure, returns
// ctx.Err() and leaves the semaphore unchanged (no permits, no queue entry).
//
// Waiters are served in the order they called. As with
// [golang.org/x/sync/semaphore.Weighted], a request for more than the size
// waits until ctx is done without holding up others, and one for 0 succeeds
// at once. A Redis failure is returned, wrapped, as is the error of a handle
// whose size differs from the one recorded in Redis. Acquire panics if n is
// negative.
func (s *Semaphore) Acquire(ctx context.Context, n int64) error {
	if n < 0 {
		panic("redisync: semaphore: n < 0")
	}
	if err := ctx.Err(); err != nil {
		return err // ctx ended before the call: fail even if permits are free
	}
	if n > s.size {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.c.life.Done():
			return lockError(s.primitive, s.name, ErrClosed)
		}
	}
	if n == 0 {
		return nil
	}
	tk := s.c.newTicket(s.l.Alive, s.l.Queue, &s.cfg)
	return s.c.acquire(ctx, s.caller(n), tk, returnErrors)
}

// TryAcquire acquires the semaphore with a weight of n without blocking. On
// success, returns true. On failure, returns false and leaves the semaphore
// unchanged. It fails when fewer than n permits are free, others are queued,
// or another call through the handle waits for Redis; a Redis failure or a
// size mismatch counts as a failure and is logged. It panics if n < 0.
func (s *Semaphore) TryAcquire(n int64) bool {
	if n < 0 {
		panic("redisync: semaphore: n < 0")
	}
	if n > s.size || s.c.isClosed() {
		return false
	}
	if n == 0 {
		return true
	}
	ok, err := s.c.tryOnce(context.Background(), s.caller(n))
	if err != nil {
		s.cfg.logger.Warn("redisync: TryAcquire failed", "name", s.name, "error", err)
	}
	return ok
}

// Release releases the semaphore with a weight of n, waking the waiters whose
// requests fit now. It panics if this handle holds fewer than n permits (lost
// ones count until released). A Redis failure is logged, not a panic: the
// permits come back when their lease lapses.
func (s *Semaphore) Release(n int64) {
	if n < 0 {
		panic("redisync: semaphore: n < 0")
	}
	if n == 0 {
		return
	}
	if n > s.size {
		// A holder holds at most the size. Checked before n becomes an int,
		// which has 32 bits on some platforms.
		panic(fmt.Sprintf("redisync: semaphore %q released more than held", s.name))
	}
	s.unlocked(s.c.releaseHold(context.Background(), s.proto(), int(n)), "redisync: semaphore %q released more than held")
}

// Held returns the number of permits this handle holds, as this process knows
// it, without touching Redis.
func (s *Semaphore) Held() int64 {
	n, _ := s.c.holds.current(s.proto().key)
	return n
}

// ForceUnlock takes every permit back from the semaphore's holders, wakes the
// queued requests that fit now, and reports whether any permit was held; the
// size and the queue are kept. Permits it took from handles of this Client
// end as lost (see [Semaphore.Done]); Release them as usual.
func (s *Semaphore) ForceUnlock(ctx context.Context) (bool, error) {
	fields, err := s.c.direct.ForceUnlockSem(ctx, &s.l)
	return s.forceUnlocked(ctx, fields, err)
}

// IsLocked reports whether any permit is held (by a holder whose lease runs).
func (s *Semaphore) IsLocked(ctx context.Context) (bool, error) {
	ttl, err := s.TTL(ctx)
	return ttl > 0, err
}

// TTL returns how long the permits of the longest-lasting holder last unless
// renewed: 0 when no permit is held.
func (s *Semaphore) TTL(ctx context.Context) (time.Duration, error) {
	st, err := state.ReadSem(ctx, s.c.rc, s.l)
	if err != nil {
		return 0, lockError(s.primitive, s.name, err)
	}
	return time.Duration(st.TTLMillis) * time.Millisecond, nil
}

// caller makes an acquire of n permits.
func (s *Semaphore) caller(n int64) *call { return &call{p: s.proto(), mode: share, n: int(n)} }

// proto describes the handle's hold (its permits).
func (s *Semaphore) proto() *protocol { return s.handle.proto(s.owner, s.newProto) }

func (s *Semaphore) newProto(owner uint64) *protocol {
	p := s.protocol(semaphore, s.l.Holders, owner, PrimitiveSemaphore, s.l.Channel, semaphorePolicy)
	p.acquire, p.release, p.newLease = s.runAcquire, s.runRelease, s.termLease
	return p
}

// lastVersion numbers the changes that Semaphore handles make to their
// entries in Redis: a call writes a version greater than any before, and
// applies only over the one its handle last saw confirmed, so that a call
// arriving after a later one of the same term changes nothing.
var lastVersion atomic.Uint64

// runAcquire runs sem_acquire for a: the holder a.field goes to a.count+a.n
// permits, in queue order, or a's ticket queues (keeps its place).
func (s *Semaphore) runAcquire(ctx context.Context, a acquisition) (scripts.Reply, error) {
	// Another call's script may hold mu while Redis does not answer (a
	// release finished in the background): wait no longer than ctx.
	if err := s.mu.Lock(ctx); err != nil {
		return scripts.Reply{}, err
	}
	defer s.mu.Unlock()
	v := s.versions(a.field)
	s.changing(a.h)
	r, err := s.c.scripts.AcquireSem(ctx, &s.l, s.sizeArg, a.hold(s.leaseMS), a.n, v)
	switch {
	case err != nil:
		s.pending = s.pending || ambiguous(err)
	case r.Outcome == scripts.Acquired:
		s.confirm(a.h, a.field, a.count+a.n, v)
	case r.Outcome == scripts.Mismatch:
		err = fmt.Errorf("%w: the handle's size is %d, Redis has %d (a name's first use fixes its size; to change it, delete %s while nobody holds permits)",
			errSizeMismatch, s.size, r.Value, s.l.Size)
	}
	if r.Outcome != scripts.Acquired {
		s.settled(a.h)
	}
	return r, err
}

// runRelease runs sem_release for r: the holder r.Field keeps r.To permits
// (0 gives them all back), and waiter r.Waiter, if set, leaves the queue. A
// final release leaves the term's latch only for a term whose first acquire
// had an unknown outcome. A lost reply may be repeated (compare-and-set by
// version).
func (s *Semaphore) runRelease(ctx context.Context, r release) (scripts.Released, error) {
	if err := s.mu.Lock(ctx); err != nil {
		return scripts.Released{}, err
	}
	defer s.mu.Unlock()
	v := s.versions(r.Field)
	if r.To > 0 || r.Latch != tombstoneTTL {
		r.Latch = ""
	}
	if r.To > 0 {
		s.changing(r.h)
	}
	out, err := s.c.scripts.ReleaseSem(ctx, &s.l, &r.Release, v)
	switch {
	case err != nil:
		s.pending = s.pending || ambiguous(err)
		s.settled(r.h)
	case out.Status == 1 && r.To > 0:
		s.confirm(r.h, r.Field, r.To, v)
	case out.Status == 1 && r.Field == s.field:
		s.field, s.version, s.pending = "", 0, false // the term is over
	default:
		s.settled(r.h)
	}
	return out, err
}

// versions (s.mu held) returns a new version for a call on field's entry,
// and the version it expects: the one the entry was last confirmed at, 0 for
// a field that has none yet (a term's first call).
func (s *Semaphore) versions(field string) scripts.SemVersion {
	v := scripts.SemVersion{Write: lastVersion.Add(1)}
	if field == s.field {
		v.Expect = s.version
	}
	return v
}

// termLease describes the lease of term t for the scheduler; its renewal
// checks the entry Redis was last seen to confirm.
func (s *Semaphore) termLease(t *term) *lease.Lease {
	_ = s.mu.Lock(context.Background()) // a hold being recorded: its acquire's script is done
	defer s.mu.Unlock()
	return s.newLease(t, []string{s.l.Leases, s.l.Holders}, scripts.SemRenew, layout.SemEntry(int64(s.permits), s.version))
}

// renewArgs (s.mu held) returns the renewal's ARGV: the holder, the lease
// and the entry the handle knows it has.
func (s *Semaphore) renewArgs() []string {
	return []string{s.field, s.leaseMS, layout.SemEntry(int64(s.permits), s.version)}
}

// changing (s.mu held) tells the renewal of h's term that a call may change
// the entry it checks.
func (s *Semaphore) changing(h *hold) {
	if t := termOf(h); t != nil {
		s.c.leases.Changing(t.lease)
	}
}

// confirm (s.mu held) records that Redis has field at permits and version,
// and tells the renewal of h's term.
func (s *Semaphore) confirm(h *hold, field string, permits int, v scripts.SemVersion) {
	s.field, s.permits, s.version, s.pending = field, permits, v.Write, false
	if t := termOf(h); t != nil && t.field == field {
		s.c.leases.Update(t.lease, s.renewArgs())
	}
}

// settled (s.mu held) ends a change that did not happen, unless a call of
// unknown outcome still leaves the entry in doubt.
func (s *Semaphore) settled(h *hold) {
	if t := termOf(h); t != nil && !s.pending {
		s.c.leases.Update(t.lease, s.renewArgs())
	}
}
