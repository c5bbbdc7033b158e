package redisync_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redisserver"
	"github.com/go-redisync/redisync/internal/redistest"
)

// A contextLock is one lock primitive's handle, as the hold's context test
// drives it.
type contextLock struct {
	name          string
	lock, unlock  func(ctx context.Context) error
	context       func(parent context.Context) context.Context
	forceUnlockBy func(ctx context.Context, other *redisync.Client) error
}

func contextLocks(c *redisync.Client, rc rueidis.Client, name string) []contextLock {
	m, fm, rw, rr := c.NewMutex(name+":m"), c.NewFencedMutex(name+":f"), c.NewRWMutex(name+":w"), c.NewRWMutex(name+":r")
	fair, sem, e := c.NewFairMutex(name+":fair"), c.NewSemaphore(name+":s", 2), c.NewElection(name+":e")
	multi := c.NewMultiMutex([]string{name + ":a", name + ":b"})
	return []contextLock{
		{"Mutex", m.LockContext, m.UnlockContext, m.Context, func(ctx context.Context, o *redisync.Client) error {
			_, err := o.NewMutex(name + ":m").ForceUnlock(ctx)
			return err
		}},
		{"FencedMutex", func(ctx context.Context) error { _, err := fm.LockToken(ctx); return err }, fm.UnlockContext, fm.Context,
			func(ctx context.Context, o *redisync.Client) error {
				_, err := o.NewFencedMutex(name + ":f").ForceUnlock(ctx)
				return err
			}},
		{"RWMutex write", rw.LockContext, rw.UnlockContext, rw.Context, func(ctx context.Context, o *redisync.Client) error {
			_, err := o.NewRWMutex(name + ":w").ForceUnlock(ctx)
			return err
		}},
		{"RWMutex read", rr.RLockContext, rr.RUnlockContext, rr.Context, func(ctx context.Context, o *redisync.Client) error {
			_, err := o.NewRWMutex(name + ":r").ForceUnlock(ctx)
			return err
		}},
		{"FairMutex", fair.LockContext, fair.UnlockContext, fair.Context, func(ctx context.Context, o *redisync.Client) error {
			_, err := o.NewFairMutex(name + ":fair").ForceUnlock(ctx)
			return err
		}},
		{"Semaphore", func(ctx context.Context) error { return sem.Acquire(ctx, 1) },
			func(context.Context) error { sem.Release(1); return nil }, sem.Context,
			func(ctx context.Context, o *redisync.Client) error {
				_, err := o.NewSemaphore(name+":s", 2).ForceUnlock(ctx)
				return err
			}},
		{"MultiMutex", multi.LockContext, multi.UnlockContext, multi.Context, func(ctx context.Context, o *redisync.Client) error {
			_, err := o.NewMutex(name + ":b").ForceUnlock(ctx)
			return err
		}},
		{"Election", func(ctx context.Context) error { return e.Campaign(ctx, "v") }, e.Resign, e.Context,
			func(ctx context.Context, _ *redisync.Client) error { // an operator deletes the leadership
				return rc.Do(ctx, rc.B().Del().Key(layout.ElectionOf(name+":e").Key).Build()).Error()
			}},
	}
}

// A holder hands its work a context that its hold's end cancels: with a
// cause wrapping ErrLockLost and why on a loss (here a ForceUnlock from
// another Client, which the holder learns at its next renewal), with one
// wrapping ErrNotHeld on a release, and at once when nothing is held. A
// parent's end cancels it too.
func TestHoldContext(t *testing.T) {
	forEachTopology(t, func(t *testing.T, tg *redisserver.Target) {
		const lease = 900 * time.Millisecond
		c, _ := newClient(t, tg, redisync.WithWatchdogTimeout(lease))
		other, rc := newClient(t, tg)
		for _, l := range contextLocks(c, rc, freshName(t)) {
			t.Run(l.name, func(t *testing.T) {
				testHoldContext(t, l, other, lease)
			})
		}
	})
}

func testHoldContext(t *testing.T, l contextLock, other *redisync.Client, lease time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before := l.context(ctx)
	require.Error(t, before.Err(), "nothing held: cancelled at once")
	assert.ErrorIs(t, context.Cause(before), redisync.ErrNotHeld)

	require.NoError(t, l.lock(ctx))
	held := l.context(ctx)
	parent, cancelParent := context.WithCancel(ctx)
	child := l.context(parent)
	require.NoError(t, held.Err(), "held")
	cancelParent()
	assert.ErrorIs(t, context.Cause(child), context.Canceled, "the parent's end cancels it")
	require.NoError(t, l.unlock(ctx))
	require.Error(t, held.Err(), "released")
	assert.ErrorIs(t, context.Cause(held), redisync.ErrNotHeld)
	assert.NotErrorIs(t, context.Cause(held), redisync.ErrLockLost)

	require.NoError(t, l.lock(ctx))
	work := l.context(ctx)
	require.NoError(t, l.forceUnlockBy(ctx, other))
	select {
	case <-work.Done():
	case <-time.After(lease + 2*time.Second):
		t.Fatal("a lost hold's context was not cancelled")
	}
	cause := context.Cause(work)
	assert.ErrorIs(t, cause, redisync.ErrLockLost)
	assert.True(t, errors.Is(cause, redisync.ErrHoldGone) || errors.Is(cause, redisync.ErrForceUnlocked), "why: %v", cause)
	_ = l.unlock(ctx) // acknowledges the loss
}

// The same on a quorum.
func TestHoldContextQuorum(t *testing.T) {
	servers := redistest.Servers(t, 3)
	const lease = 900 * time.Millisecond
	c := newQuorumClient(t, servers, redisync.WithWatchdogTimeout(lease))
	other := newQuorumClient(t, servers)
	name := freshName(t)
	m, fm := c.NewMutex(name+":m"), c.NewFencedMutex(name+":f")
	for _, l := range []contextLock{
		{"Mutex", m.LockContext, m.UnlockContext, m.Context, func(ctx context.Context, o *redisync.Client) error {
			_, err := o.NewMutex(name + ":m").ForceUnlock(ctx)
			return err
		}},
		{"FencedMutex", func(ctx context.Context) error { _, err := fm.LockToken(ctx); return err }, fm.UnlockContext, fm.Context,
			func(ctx context.Context, o *redisync.Client) error {
				_, err := o.NewFencedMutex(name + ":f").ForceUnlock(ctx)
				return err
			}},
	} {
		t.Run(l.name, func(t *testing.T) { testHoldContext(t, l, other.Client, lease) })
	}
}

// A force unlock through another Client tells the holding Client at once,
// on the holder's own channel: its Done closes (and its hold's context is
// cancelled, with ErrForceUnlocked) long before its next renewal, which with
// the default watchdog timeout is 10 s away. It learned at that renewal.
func TestForceUnlockTellsTheHolder(t *testing.T) {
	check := func(t *testing.T, holder, other *redisync.Client) {
		name := freshName(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, l := range contextLocks(holder, nil, name)[:6] { // the handles with ForceUnlock
			t.Run(l.name, func(t *testing.T) {
				require.NoError(t, l.lock(ctx))
				work := l.context(ctx)
				start := time.Now()
				require.NoError(t, l.forceUnlockBy(ctx, other))
				cause := toldWithin(t, work, 5*time.Second, "of the force unlock")
				took := time.Since(start)
				t.Logf("told %v after the force unlock returned", took.Round(time.Microsecond))
				assert.Less(t, took, time.Second, "told at once, not at the next renewal (generous: the target is 100 ms)")
				assert.ErrorIs(t, cause, redisync.ErrForceUnlocked)
				_ = l.unlock(ctx)
			})
		}
	}
	forEachTopology(t, func(t *testing.T, tg *redisserver.Target) {
		holder, _ := newClient(t, tg)
		other, _ := newClient(t, tg)
		check(t, holder, other)
	})
	t.Run("quorum", func(t *testing.T) {
		servers := redistest.Servers(t, 3)
		holder := newQuorumClient(t, servers)
		other := newQuorumClient(t, servers)
		name := freshName(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		m := holder.NewMutex(name)
		require.NoError(t, m.LockContext(ctx))
		work := m.Context(ctx)
		_, err := other.NewMutex(name).ForceUnlock(ctx)
		require.NoError(t, err)
		assert.ErrorIs(t, toldWithin(t, work, 5*time.Second, "of the force unlock"), redisync.ErrForceUnlocked)
	})
}

// toldWithin fails t unless the hold context work ends within d (what
// names the news it waits for), and returns its cause.
func toldWithin(t *testing.T, work context.Context, d time.Duration, what string) error {
	t.Helper()
	select {
	case <-work.Done():
	case <-time.After(d):
		t.Fatalf("the holder was not told %s", what)
	}
	return context.Cause(work)
}
