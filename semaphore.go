package redisync

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"

	"github.com/go-redisync/redisync/internal/keys"
)

// A Semaphore bounds access to a resource shared by every process that uses
// the same name on the same Redis: callers acquire and release weights
// (permits) out of a fixed size, as with [golang.org/x/sync/semaphore.Weighted],
// whose behaviour it follows. Waiters are served in FIFO order across
// processes, so a large request is not starved by a stream of small ones.
//
// Permits are held under a lease per handle (see [WithWatchdogTimeout] and
// [WithLease]): the permits of a holder that crashes come back when its lease
// lapses, and waiters are woken then. [Semaphore.Done] and [Semaphore.Err]
// report the loss of a handle's permits. Queued waiters prove they are alive
// by heartbeat, as a [FairMutex]'s do (see [WithHeartbeatTimeout]).
//
// The size is recorded in Redis by the first use of the name and stays there
// (delete the key redisync_sem_size:{name} to change it); a handle made with
// another size fails to acquire. The layout is redisync's own: holders in a
// hash redisync_sem:{name}, their leases in a sorted set
// redisync_sem_lease:{name}, the queue in redisync_sem_queue:{name},
// redisync_sem_alive:{name} and redisync_sem_want:{name}, and wake-ups
// naming one waiter each on redisync_sem_channel:{name}.
//
// A handle is one holder: the permits acquired through it, by any goroutine,
// are counted together and released through it. A Semaphore must not be
// copied after first use.
type Semaphore struct {
	_ noCopy

	c       *Client
	cfg     config
	name    string
	size    int64
	sizeArg string
	keys    []string // holders, leases, size, queue, heartbeats, requests, channel, latch prefix
	handle  uint64   // the handle's number
	leaseMS string

	// op serializes the handle's calls to Redis and guards the fields below.
	op   opLock
	held int64 // permits held under the current term
	lost int64 // permits of an ended term that Release may still take back
	rec  *hold // the Client's record of the current term, nil when none
	// holder is the current term's holder id in Redis, "<client-uuid>:s<n>",
	// made for the term's first acquire and never used by another term.
	holder string
	// version is the version of the holder's entry last confirmed by Redis
	// (0: none yet); pending records a call since then whose outcome is
	// unknown, and unknown one at any time in the term (its end then leaves
	// a latch that refuses a late copy of its first acquire).
	version uint64
	pending bool
	unknown bool
	// heldNow mirrors held for Held, which does not wait for calls in flight.
	heldNow atomic.Int64

	cur atomic.Pointer[term] // the latest term, for Done and Err
}

// errSizeMismatch is wrapped by the error of an acquire through a handle
// whose size differs from the one recorded in Redis.
var errSizeMismatch = errors.New("size differs from the size recorded in Redis")

// NewSemaphore returns a handle on the semaphore called name, with the given
// maximum combined weight for concurrent access. Creating a handle touches
// neither Redis nor the network. The options override the Client's for this
// handle.
//
// NewSemaphore panics if size is negative, if name is invalid (see
// [Client.NewMutex]), or if an option is invalid.
func (c *Client) NewSemaphore(name string, size int64, opts ...Option) *Semaphore {
	if size < 0 {
		panic("redisync: semaphore size < 0")
	}
	cfg := c.handleConfig(name, opts)
	aux := func(prefix string) string { return keys.Aux(prefix, name) }
	handle := lastOwner.Add(1)
	return &Semaphore{
		c:       c,
		cfg:     cfg,
		name:    name,
		size:    size,
		sizeArg: strconv.FormatInt(size, 10),
		keys: []string{aux(keys.SemHoldersPrefix), aux(keys.SemLeasesPrefix), aux(keys.SemSizePrefix),
			aux(keys.SemQueuePrefix), aux(keys.SemAlivePrefix), aux(keys.SemWantPrefix), aux(keys.SemChannelPrefix),
			aux(keys.SemLatchPrefix)},
		handle:  handle,
		leaseMS: strconv.FormatInt(cfg.leaseTTL().Milliseconds(), 10),
	}
}

// Name returns the name of the semaphore.
func (s *Semaphore) Name() string { return s.name }

// Acquire acquires the semaphore with a weight of n, blocking until resources
// are available or ctx is done. On success, returns nil. On failure, returns
// ctx.Err() and leaves the semaphore unchanged: no permits taken, no queue
// entry, no subscription.
//
// Waiters are served in the order they called. A request for more than the
// size waits until ctx is done without holding up others, as with
// [golang.org/x/sync/semaphore.Weighted]; a request for 0 succeeds at once.
// A Redis failure is returned, wrapped, as is the error of a handle whose size
// differs from the size recorded in Redis. Acquire panics if n is negative.
func (s *Semaphore) Acquire(ctx context.Context, n int64) error {
	if n < 0 {
		panic("redisync: semaphore: n < 0")
	}
	select {
	case <-ctx.Done():
		return ctx.Err() // ctx ended before the call: fail even if permits are free
	default:
	}
	if n > s.size {
		<-ctx.Done()
		return ctx.Err()
	}
	if n == 0 {
		return nil
	}
	tk := s.c.newTicket(s.keys[4], s.keys[3], &s.cfg)
	return s.c.acquireQueued(ctx, s.name, s.keys[6], &semAcquirer{s: s, n: n}, tk, false, &s.cfg)
}

// TryAcquire acquires the semaphore with a weight of n without blocking. On
// success, returns true. On failure, returns false and leaves the semaphore
// unchanged. It fails when fewer than n permits are free or others are
// queued, and while another call through the same handle waits for Redis; a
// Redis failure, or a size that differs from the one recorded in Redis,
// counts as a failure and is logged. TryAcquire panics if n is negative.
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
	ctx := context.Background()
	a := &semAcquirer{s: s, n: n}
	res, err := a.try(ctx, nil)
	observeTry(ctx, &s.cfg, PrimitiveSemaphore, s.name, res)
	if err != nil {
		if a.unknown {
			a.leave(ctx, nil)
		}
		s.cfg.logger.Warn("redisync: TryAcquire failed", "name", s.name, "error", err)
	}
	return res.acquired
}

// Release releases the semaphore with a weight of n, waking the waiters whose
// requests fit now. It panics with "redisync: semaphore released more than
// held" if this handle holds fewer than n permits (permits lost with an
// expired lease still count as held until released). A Redis failure does not
// panic: it is logged, and the permits come back when their lease lapses.
func (s *Semaphore) Release(n int64) {
	if n < 0 {
		panic("redisync: semaphore: n < 0")
	}
	if err := s.release(n); err != nil {
		s.cfg.logger.Warn("redisync: semaphore release failed; the permits come back with their lease",
			"name", s.name, "error", err)
	}
}

// Held returns the number of permits this handle holds, as this process
// knows it; it does not touch Redis.
func (s *Semaphore) Held() int64 { return s.heldNow.Load() }

// Done returns a channel that is closed when this handle's permits are all
// released or lost: the current term, from the first acquire after holding
// none. If the handle has never acquired, Done returns a closed channel.
func (s *Semaphore) Done() <-chan struct{} { return s.cur.Load().doneChan() }

// Err returns nil while the handle holds permits and after they were released
// cleanly. After their lease lapsed, or they were otherwise gone from Redis,
// it returns an error wrapping ErrLockLost (ErrClosed if the Client was closed
// while they were held).
func (s *Semaphore) Err() error { return s.cur.Load().errOrNil() }
