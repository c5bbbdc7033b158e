package redisync

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/scripts"
)

// A CountingSemaphore is a count of free permits shared by every process
// that uses the same name on the same Redis, in Redisson's RSemaphore layout:
// a Java service's RSemaphore of the same name takes and gives back the same
// permits, and a release on either side wakes the waiters of both. The first
// use of the name sets the count to the handle's size, as Java's
// trySetPermits does; a count set already (by Java, or a handle of another
// size) is kept.
//
// It is Redisson's semaphore, with Redisson's limits, which [Semaphore]
// does not have:
//
//   - Permits are not leased: the permits of a process that dies while
//     holding them are not given back, here or in Java. Count them back by
//     hand (INCRBY on the name) or use a Semaphore.
//   - Waiters are not served in order: a request for many permits can wait
//     behind a stream of small ones.
//   - The count has no bound: a release adds to it whatever it was, so
//     permits given back after the count was set again (its key deleted)
//     raise it above the size.
//
// Each call keeps a latch in Redis for a minute (one small key per
// acquisition, redisync_rsem_latch:{name}:<id>), so that a repeat of an
// attempt whose reply was lost takes its permits once, and a late copy of an
// attempt whose call gave up takes nothing.
//
// A handle counts the permits acquired through it ([CountingSemaphore.Held]),
// and releasing more than that panics, as with
// [golang.org/x/sync/semaphore.Weighted]. A CountingSemaphore must not be
// copied after first use.
type CountingSemaphore struct {
	h       handle // its Client, options and name; it holds nothing the Client tracks
	l       layout.CountSem
	size    int64
	sizeArg string
	p       *protocol
	held    atomic.Int64
}

// NewCountingSemaphore returns a handle on the counting semaphore called name,
// whose count starts at size when the name is first used. Names and panics
// are as for [Client.NewMutex]; it also panics if size is negative or above
// [MaxSemaphoreSize]. Lease options have no effect: its permits are not
// leased.
func (c *Client) NewCountingSemaphore(name string, size int64, opts ...Option) *CountingSemaphore {
	c.single("NewCountingSemaphore")
	if size < 0 {
		panic("redisync: counting semaphore size < 0")
	}
	if size > MaxSemaphoreSize {
		panic("redisync: counting semaphore size > MaxSemaphoreSize")
	}
	s := &CountingSemaphore{l: layout.CountSemOf(name), size: size, sizeArg: strconv.FormatInt(size, 10)}
	c.initHandle(&s.h, PrimitiveCountingSemaphore, name, opts)
	p := s.h.protocol(exclusive, s.l.Key, s.h.owner, PrimitiveCountingSemaphore, s.l.Channel, countingPolicy)
	p.acquire = func(ctx context.Context, a acquisition) (scripts.Reply, error) {
		r, err := c.scripts.AcquireCountSem(ctx, &s.l, a.field, int64(a.n), s.sizeArg, tombstoneTTL)
		switch {
		case err != nil:
			return r, err
		case r.Outcome == scripts.Acquired:
			s.held.Add(int64(a.n))
			return scripts.Reply{Outcome: scripts.Complete}, nil
		case r.Outcome == scripts.Busy:
			// A release on either side publishes the count; a second is the
			// longest a waiter goes without looking, should a message be
			// missed (a count changed by hand publishes nothing).
			return scripts.Reply{Outcome: scripts.Busy, Value: recheckMS}, nil
		}
		return r, nil
	}
	p.undo = func(ctx context.Context, field string, n int) error {
		_, err := c.scripts.UndoCountSem(ctx, &s.l, field, int64(n), tombstoneTTL)
		return err
	}
	s.p = p
	return s
}

// recheckMS is how long a CountingSemaphore waiter waits for a message before
// it looks at the count again, in milliseconds.
const recheckMS = 1000

// Name returns the semaphore's name, as given to its constructor.
func (s *CountingSemaphore) Name() string { return s.h.name }

// Acquire takes n permits, blocking until n are free or ctx is done. On
// success it returns nil; when ctx ends first, ctx.Err(), having taken
// nothing. A request for 0 succeeds at once. A Redis failure is returned,
// wrapped; what an attempt of unknown outcome may have taken is given back
// (in the background when Redis does not answer at once, until it does). It panics if n is negative or above [MaxSemaphoreSize] (the count
// itself may be larger, set by Java or by releases).
func (s *CountingSemaphore) Acquire(ctx context.Context, n int64) error {
	checkCount(n)
	if err := ctx.Err(); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	return s.h.c.acquire(ctx, &call{p: s.p, mode: share, n: int(n)}, nil, returnErrors)
}

// TryAcquire takes n permits if n are free, without waiting, and reports
// whether it did. A Redis failure counts as a failure and is logged (an
// attempt of unknown outcome is undone first). It panics as Acquire does.
func (s *CountingSemaphore) TryAcquire(n int64) bool {
	checkCount(n)
	if n == 0 {
		return true
	}
	_, ok := s.h.tryCount(s.p, int(n), "")
	return ok
}

// checkCount panics if a CountingSemaphore cannot take n permits. Its
// script compares n with the count as Lua numbers (doubles), which tell
// integers apart only up to 2^53: a larger n could be taken from a count
// smaller than n.
func checkCount(n int64) {
	switch {
	case n < 0:
		panic("redisync: counting semaphore: n < 0")
	case n > MaxSemaphoreSize:
		panic("redisync: counting semaphore: n > MaxSemaphoreSize")
	}
}

// tryCount makes the single attempt of a Try call of a semaphore whose
// acquisitions hold nothing the Client tracks (p's), for n permits with the
// lease argument permitLease, and returns the call's field and whether it
// took them. A Redis failure counts as a failure and is logged (an attempt
// of unknown outcome is undone first).
func (h *handle) tryCount(p *protocol, n int, permitLease string) (string, bool) {
	if h.c.isClosed() {
		return "", false
	}
	ctx, cancel := h.cfg.calls.within(context.Background())
	defer cancel()
	h.c.takeBacks.settled(ctx, h.name)
	a := &call{p: p, mode: share, n: n, permitLease: permitLease}
	a.field, _ = h.c.newField(h.owner, "", "")
	a.trace.sent = true
	sent := time.Now()
	r, err := p.acquire(ctx, acquisition{field: a.field, n: a.n, permitLease: permitLease})
	if err == nil && r.Outcome == scripts.Complete && a.outlived(sent) {
		err = lockError(h.primitive, h.name, errStaleHold) // their lease ran out before the reply was read
	}
	if err != nil {
		if ambiguous(err) {
			a.trace.unknownFirst(err)
		}
		h.c.cleanUp(h.name, func() { h.c.giveUp(ctx, a) })
		h.cfg.logger.Warn("redisync: TryAcquire failed", "name", h.name, "error", err)
		return "", false
	}
	return a.field, r.Outcome == scripts.Complete
}

// Release gives n permits back and publishes the count, which wakes the
// waiters of every process, Java's included. It panics if this handle holds
// fewer than n permits. It waits for Redis up to the call timeout (see
// [WithCallTimeout]); a release Redis has not confirmed by then goes on in
// the background, sent again until Redis answers (a repeat adds nothing
// twice), since permits without a lease would otherwise be lost to the
// count. If the Client closes first, or Redis refuses it, the permits are
// lost to the count, and the error is logged with what to do.
func (s *CountingSemaphore) Release(n int64) {
	if n < 0 {
		panic("redisync: counting semaphore: n < 0")
	}
	if n == 0 {
		return
	}
	for held := s.held.Load(); ; held = s.held.Load() {
		if held < n {
			panic(fmt.Sprintf("redisync: counting semaphore %q released more than held", s.h.name))
		}
		if s.held.CompareAndSwap(held, held-n) {
			break // exact under racing calls: a legitimate Release never sees another's overdraft
		}
	}
	id, _ := s.h.c.newField(s.h.owner, ":r", "")
	if s.release(s.h.cfg.calls.get(), id, n, 1) {
		return
	}
	s.h.c.background.Go(func() {
		for attempt := 2; ; attempt++ {
			select {
			case <-time.After(min(time.Duration(attempt)*50*time.Millisecond, time.Second)):
			case <-s.h.c.life.Done():
				s.lost(n, attempt, ErrClosed)
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), cleanupBudget)
			done := s.release(ctx, id, n, attempt)
			cancel()
			if done {
				return
			}
		}
	})
}

// release runs the release id of n permits once, as attempt, and reports
// whether it is done: Redis confirmed it, or refused it (which is logged).
func (s *CountingSemaphore) release(ctx context.Context, id string, n int64, attempt int) bool {
	_, _, err := s.h.c.direct.ReleaseCountSem(ctx, &s.l, id, n, tombstoneTTL)
	switch {
	case err == nil:
		s.h.c.wakeEvery(s.l.Channel) // this process's waiters, without the round trip
		return true
	case !ambiguous(err):
		s.lost(n, attempt, err)
		return true
	case attempt == 1 || attempt%100 == 0:
		s.h.cfg.logger.Warn("redisync: counting semaphore release not confirmed yet; retrying in the background",
			"name", s.h.name, "permits", n, "attempts", attempt, "error", err)
	}
	return false
}

// lost logs that n permits could not be given back after attempts.
func (s *CountingSemaphore) lost(n int64, attempts int, err error) {
	s.h.cfg.logger.Error("redisync: counting semaphore permits not given back; the count stays lower until they are added (INCRBY on the name)",
		"name", s.h.name, "permits", n, "attempts", attempts, "error", err)
}

// Held returns the permits acquired through this handle and not yet released,
// as this process knows it, without touching Redis.
func (s *CountingSemaphore) Held() int64 { return s.held.Load() }

// Available returns the free permits: the count in Redis, or the handle's
// size when the name was never used (the first acquire sets it). Permits
// that a call of this Client that gave up is still giving back are counted
// free: Available waits for them (a quarter of a second at most, or until
// ctx ends), as a later Acquire does.
func (s *CountingSemaphore) Available(ctx context.Context) (int64, error) {
	s.h.c.takeBacks.settled(ctx, s.h.name)
	rc := s.h.c.rc
	n, err := rc.Do(ctx, rc.B().Get().Key(s.l.Key).Build()).AsInt64()
	switch {
	case rueidis.IsRedisNil(err):
		return s.size, nil
	case err != nil:
		return 0, fmt.Errorf("redisync: CountingSemaphore %q: %w", s.h.name, err)
	}
	return n, nil
}
