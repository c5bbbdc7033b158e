package redisync

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/scripts"
)

// A WaitGroup is a counter shared by every process that uses the same name on
// the same Redis, as [sync.WaitGroup] is by goroutines: callers add to it,
// workers call Done as they finish, and Wait blocks until it is zero. It is
// stored in Redisson's RCountDownLatch layout, so a Java service's
// countDown() to zero wakes a Go Wait, and a Go Done to zero wakes a Java
// await(); a zero counter is an absent key.
//
// The counter is not leased: a worker that dies before its Done leaves the
// count up for good, as in Redisson, and Wait then waits until its context
// ends. When workers may crash, count them with a [Semaphore] instead, whose
// permits come back when a holder's lease lapses, or call Add with a negative
// delta for the dead ones.
//
// A WaitGroup's names are stricter than a lock's: Redisson derives its channel
// by wrapping the whole name in braces, so a name containing "{" or "}" is
// accepted only if that channel lands in the counter's cluster slot.
type WaitGroup struct {
	h  handle // its Client, options and name; a WaitGroup holds nothing
	l  layout.WaitGroup
	wp *protocol // Wait's: a wait for zero, which takes no hold
}

// NewWaitGroup returns a handle on the WaitGroup called name. Creating a
// handle touches neither Redis nor the network. It panics if the name is
// invalid (see [WaitGroup]) or if an option is invalid.
func (c *Client) NewWaitGroup(name string, opts ...Option) *WaitGroup {
	c.single("NewWaitGroup")
	if err := layout.CheckWaitGroup(name); err != nil {
		panic("redisync: invalid WaitGroup name " + strconv.Quote(name) + ": " + err.Error())
	}
	wg := &WaitGroup{l: layout.WaitGroupOf(name)}
	c.initHandle(&wg.h, PrimitiveWaitGroup, name, opts)
	p := wg.h.protocol(exclusive, wg.l.Key, wg.h.owner, PrimitiveWaitGroup, wg.l.Channel, waitGroupPolicy)
	p.acquire = func(ctx context.Context, _ acquisition) (scripts.Reply, error) {
		n, err := wg.count(ctx)
		if err != nil || n > 0 {
			return scripts.Reply{Outcome: scripts.Busy, Value: -1}, err // no expiry bounds the wait
		}
		return scripts.Reply{Outcome: scripts.Complete}, nil
	}
	wg.wp = p
	return wg
}

// Name returns the WaitGroup's name, as given to its constructor.
func (wg *WaitGroup) Name() string { return wg.h.name }

// Add adds delta, which may be negative, to the counter. If the counter
// becomes zero, the callers blocked in Wait, in every process, are released.
// If the counter would go below zero, Add changes nothing and returns an error
// wrapping [ErrNegativeCounter]. A Redis failure is returned, wrapped.
func (wg *WaitGroup) Add(ctx context.Context, delta int64) error {
	if delta == 0 {
		return nil
	}
	applied, n, err := wg.h.c.direct.AddWaitGroup(ctx, &wg.l, delta)
	switch {
	case err != nil:
		return wg.wrap(err)
	case !applied:
		return wg.wrap(fmt.Errorf("adding %d to %d: %w", delta, n, ErrNegativeCounter))
	case n == 0:
		wg.h.c.wakeEvery(wg.l.Channel) // this process's waiters, without the round trip
	}
	return nil
}

// Done decrements the counter by one: Add(ctx, -1).
func (wg *WaitGroup) Done(ctx context.Context) error { return wg.Add(ctx, -1) }

// Wait blocks until the counter is zero or ctx is done. It returns nil at
// once when the counter is zero, and ctx.Err() when ctx ends first, leaving no
// subscription behind. A Redis failure is returned, wrapped.
func (wg *WaitGroup) Wait(ctx context.Context) error {
	return wg.h.c.acquire(ctx, &call{p: wg.wp, mode: share, n: 1}, nil, returnErrors)
}

// Count returns the counter's value.
func (wg *WaitGroup) Count(ctx context.Context) (int64, error) {
	n, err := wg.count(ctx)
	if err != nil {
		return 0, wg.wrap(err)
	}
	return n, nil
}

// count reads the counter: 0 when its key is absent.
func (wg *WaitGroup) count(ctx context.Context) (int64, error) {
	n, err := wg.h.c.rc.Do(ctx, wg.h.c.rc.B().Get().Key(wg.l.Key).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return 0, nil
	}
	return n, err
}

// wrap wraps err with the WaitGroup's name.
func (wg *WaitGroup) wrap(err error) error {
	return fmt.Errorf("redisync: WaitGroup %q: %w", wg.h.name, err)
}
