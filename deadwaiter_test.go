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
)

// javaWait waits for the lock name as a Redisson RLock waiter does: it
// subscribes to the lock's channel, tries, and sleeps until a "0" or "1"
// message (it ignores any other) or the PTTL it read, then tries again. It
// returns once it holds the lock under field, or when ctx ends.
func javaWait(ctx context.Context, t testing.TB, rc rueidis.Client, name, field string) error {
	wake := make(chan struct{}, 1)
	stop := subscribeT(t, rc, layout.MutexOf(name).Channel, func(m rueidis.PubSubMessage) {
		if m.Message == "0" || m.Message == "1" {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	})
	defer stop()
	for {
		ttl := javaLock(t, rc, name, field, 30000)
		if ttl == -1 {
			return nil
		}
		select {
		case <-wake:
		case <-time.After(time.Duration(ttl) * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// subscribeT is subscribe for any testing.TB.
func subscribeT(t testing.TB, rc rueidis.Client, channel string, fn func(rueidis.PubSubMessage)) (stop func()) {
	return subscribe(t.(*testing.T), rc, channel, fn)
}

// A waiter that does not queue in Redis (a FencedMutex, a MultiMutex, a
// Mutex with a fixed lease or an explicit owner, a Redisson RLock) gets the
// lock within about a heartbeat timeout once it is free, also when a
// release handed it to a queued waiter whose process had just died: the
// handed hold expires at the dead waiter's heartbeat deadline, and the
// waiter that does not queue must not sleep on the holder's lease it read
// before (30 s), with the lock free.
func TestDeadQueuedWaiterDelaysNoOneForALease(t *testing.T) {
	t.Parallel() // waits for leases to run out: see redistest.Parallel
	const heartbeat = time.Second
	kinds := []struct {
		name string
		wait func(ctx context.Context, c *redisync.Client, rc rueidis.Client, name string) (release func(), err error)
	}{
		{"FencedMutex", func(ctx context.Context, c *redisync.Client, _ rueidis.Client, name string) (func(), error) {
			m := c.NewFencedMutex(name)
			return m.Unlock, m.LockContext(ctx)
		}},
		{"MultiMutex", func(ctx context.Context, c *redisync.Client, _ rueidis.Client, name string) (func(), error) {
			m := c.NewMultiMutex([]string{name, name + ":other"})
			return m.Unlock, m.LockContext(ctx)
		}},
		{"WithLease", func(ctx context.Context, c *redisync.Client, _ rueidis.Client, name string) (func(), error) {
			m := c.NewMutex(name, redisync.WithLease(30*time.Second))
			return m.Unlock, m.LockContext(ctx)
		}},
		{"WithOwner", func(ctx context.Context, c *redisync.Client, _ rueidis.Client, name string) (func(), error) {
			m := c.NewMutex(name)
			owner := redisync.WithOwner(ctx)
			return func() { _ = m.UnlockContext(owner) }, m.LockContext(owner)
		}},
		{"Redisson", func(ctx context.Context, _ *redisync.Client, rc rueidis.Client, name string) (func(), error) {
			const field = "5e4d3c2b-java:1"
			return func() { javaUnlock(t, rc, name, field) }, javaWait(ctx, t, rc, name, field)
		}},
	}
	for _, kind := range kinds {
		t.Run(kind.name, func(t *testing.T) {
			name := freshName(t)
			hc, rc := newClient(t, standalone)
			h := hc.NewMutex(name)
			h.Lock()
			child := startQueuedChild(t, standalone, "mutex-wait", name, 30*time.Second, heartbeat, "waiting")
			waitMutexQueued(t, rc, name, 1)
			wc, wrc := newClient(t, standalone)
			ctx, cancel := context.WithTimeout(context.Background(), 10*heartbeat)
			defer cancel()
			type result struct {
				release func()
				err     error
				at      time.Time
			}
			got := make(chan result, 1)
			go func() {
				release, err := kind.wait(ctx, wc, wrc, name)
				got <- result{release, err, time.Now()}
			}()
			time.Sleep(200 * time.Millisecond) // the waiter found the lock taken for 30 s
			require.NoError(t, child.Process.Kill())
			unlocked := time.Now()
			h.Unlock() // hands the lock to the dead waiter, whose heartbeat is still current
			r := <-got
			if errors.Is(r.err, context.DeadlineExceeded) {
				t.Fatalf("the waiter did not get the lock in %v after the release to the dead waiter", 10*heartbeat)
			}
			require.NoError(t, r.err)
			took := r.at.Sub(unlocked)
			t.Logf("the waiter took the lock %v after the release to the dead waiter", took)
			assert.Less(t, took, 3*heartbeat, "bound: the dead waiter's handed hold, then about a heartbeat timeout")
			r.release()
		})
	}
}
