package redisync_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redisserver"
)

// MultiMutexes over overlapping subsets of four names, given in random
// orders, in 4 Clients, and a Mutex on one of the names: every lock is
// served (no deadlock) and no name ever has two holders.
func TestMultiMutexOverlapping(t *testing.T) {
	forEachTopology(t, func(t *testing.T, tg *redisserver.Target) {
		base := "multi:" + freshName(t) + ":"
		pool := []string{base + "a", base + "b", base + "c", base + "d"}
		inside := make(map[string]*atomic.Int32)
		for _, name := range pool {
			inside[name] = new(atomic.Int32)
		}
		enter := func(names []string) {
			for _, name := range names {
				assert.EqualValues(t, 1, inside[name].Add(1), "one holder of %s", name)
			}
			time.Sleep(time.Millisecond)
			for _, name := range names {
				inside[name].Add(-1)
			}
		}
		var clients []*redisync.Client
		for range 4 {
			c, _ := newClient(t, tg)
			clients = append(clients, c)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		var locks atomic.Int32
		var wg sync.WaitGroup
		for i := range 8 {
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			wg.Go(func() {
				for range 10 {
					names := rng.Perm(len(pool))[:2+rng.IntN(3)] // 2 to 4 names, in random order
					var subset []string
					for _, k := range names {
						subset = append(subset, pool[k])
					}
					m := clients[i%4].NewMultiMutex(subset)
					if !assert.NoError(t, m.LockContext(ctx)) {
						return
					}
					locks.Add(1)
					enter(subset)
					assert.NoError(t, m.UnlockContext(ctx))
				}
			})
		}
		wg.Go(func() {
			m := clients[0].NewMutex(pool[2])
			for range 20 {
				if !assert.NoError(t, m.LockContext(ctx)) {
					return
				}
				enter(pool[2:3])
				assert.NoError(t, m.UnlockContext(ctx))
			}
		})
		wg.Wait()
		assert.EqualValues(t, 80, locks.Load())
	})
}

// A MultiMutex whose wait times out holds none of its names (those taken
// before the wait are given back) and leaves no subscription; one that
// waits is woken by the release of the name it waits for, also after it
// moved on to wait for another.
func TestMultiMutexAllOrNothing(t *testing.T) {
	t.Parallel() // waits for leases to run out: see redistest.Parallel
	forEachTopology(t, func(t *testing.T, tg *redisserver.Target) {
		a, rc := newClient(t, tg)
		b, _ := newClient(t, tg)
		base := "multi:" + freshName(t) + ":"
		names := []string{base + "a", base + "b", base + "c"}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		blockers := []*redisync.Mutex{a.NewMutex(names[0]), a.NewMutex(names[2])}
		for _, m := range blockers {
			require.NoError(t, m.LockContext(ctx)) // 30 s leases
		}
		multi := b.NewMultiMutex(names)
		short, stop := context.WithTimeout(ctx, 300*time.Millisecond)
		defer stop()
		assert.ErrorIs(t, multi.LockContext(short), context.DeadlineExceeded)
		assert.Zero(t, existing(t, rc, names[1:2]), "the free name was given back (or never taken)")
		for _, name := range []string{names[0], names[2]} {
			assert.Eventually(t, func() bool { return subscribers(t, tg, layout.MutexOf(name).Channel) == 0 },
				5*time.Second, 10*time.Millisecond, "no subscription left on %s", name)
		}
		ok, err := multi.TryLockContext(ctx)
		require.NoError(t, err)
		assert.False(t, ok)

		locked := make(chan time.Time, 1)
		go func() {
			assert.NoError(t, multi.LockContext(ctx))
			locked <- time.Now()
		}()
		time.Sleep(100 * time.Millisecond)
		blockers[0].Unlock() // the waiter moves on to the other name
		time.Sleep(100 * time.Millisecond)
		released := time.Now()
		blockers[1].Unlock()
		took := (<-locked).Sub(released)
		t.Logf("locked %v after the last name it waited for was released", took)
		assert.Less(t, took, 2*time.Second, "woken by the release, not the 30 s lease")
		assert.EqualValues(t, 3, existing(t, rc, names))
		multi.Unlock()
		assert.Zero(t, existing(t, rc, names))
	})
}

// The loss of one name ends the whole hold: Done closes, Err wraps
// ErrLockLost, and Unlock releases the names it still has.
func TestMultiMutexLoss(t *testing.T) {
	c, rc := newClient(t, standalone, redisync.WithWatchdogTimeout(600*time.Millisecond))
	base := "multi:" + freshName(t) + ":"
	names := []string{base + "a", base + "b"}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m := c.NewMultiMutex(names)
	require.NoError(t, m.LockContext(ctx))
	require.NoError(t, rc.Do(ctx, rc.B().Del().Key(names[1]).Build()).Error())
	select {
	case <-m.Done():
	case <-ctx.Done():
		t.Fatal("the loss was not reported")
	}
	assert.ErrorIs(t, m.Err(), redisync.ErrLockLost)
	assert.ErrorIs(t, m.Err(), redisync.ErrHoldGone)
	assert.ErrorIs(t, m.UnlockContext(ctx), redisync.ErrLockLost)
	assert.Zero(t, existing(t, rc, names[:1]), "Unlock released the name the hold still had")
	require.NoError(t, m.LockContext(ctx))
	require.NoError(t, m.UnlockContext(ctx))
	assert.NoError(t, m.Err())
	assert.Zero(t, existing(t, rc, names))
	assert.ErrorIs(t, m.UnlockContext(ctx), redisync.ErrNotHeld)
	assert.PanicsWithValue(t, fmt.Sprintf("redisync: unlock of unlocked MultiMutex %q", strings.Join(m.Names(), ",")), m.Unlock)
}

// A Redisson RLock on one of the names (its raw protocol) excludes a
// MultiMutex, and its unlock message wakes it.
func TestMultiMutexRedissonInterop(t *testing.T) {
	forEachTopology(t, func(t *testing.T, tg *redisserver.Target) {
		c, rc := newClient(t, tg)
		base := "multi:" + freshName(t) + ":"
		names := []string{base + "a", base + "b"}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		java := names[1]
		require.NoError(t, rc.Do(ctx, rc.B().Hset().Key(java).FieldValue().FieldValue("8f1d-java:1", "1").Build()).Error())
		require.NoError(t, rc.Do(ctx, rc.B().Pexpire().Key(java).Milliseconds(30000).Build()).Error())
		m := c.NewMultiMutex(names)
		ok, err := m.TryLockContext(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "the Java hold excludes")
		locked := make(chan time.Time, 1)
		go func() {
			assert.NoError(t, m.LockContext(ctx))
			locked <- time.Now()
		}()
		time.Sleep(100 * time.Millisecond)
		unlocked := time.Now()
		require.NoError(t, rc.Do(ctx, rc.B().Del().Key(java).Build()).Error()) // Redisson's unlock
		publish := rc.B().Publish().Channel(layout.MutexOf(java).Channel).Message("0").Build()
		if tg.Cluster != nil {
			publish = rc.B().Spublish().Channel(layout.MutexOf(java).Channel).Message("0").Build()
		}
		require.NoError(t, rc.Do(ctx, publish).Error())
		took := (<-locked).Sub(unlocked)
		t.Logf("locked %v after the Java unlock", took)
		assert.Less(t, took, 2*time.Second)
		fields, err := rc.Do(ctx, rc.B().Hgetall().Key(java).Build()).AsStrMap()
		require.NoError(t, err)
		for field, count := range fields {
			assert.Regexp(t, `^[0-9a-f-]{36}:\d+$`, field, "a Redisson-shaped hold field")
			assert.Equal(t, "1", count)
		}
		m.Unlock()
	})
}

// NewMultiMutex refuses no names, duplicates and invalid names.
func TestMultiMutexNames(t *testing.T) {
	c, _ := newClient(t, standalone)
	assert.PanicsWithValue(t, "redisync: NewMultiMutex without names", func() { c.NewMultiMutex(nil) })
	assert.PanicsWithValue(t, `redisync: NewMultiMutex: duplicate name "x"`, func() { c.NewMultiMutex([]string{"x", "y", "x"}) })
	assert.Panics(t, func() { c.NewMultiMutex([]string{"x", ""}) })
	m := c.NewMultiMutex([]string{"y", "x"})
	assert.Equal(t, []string{"y", "x"}, m.Names())
	select {
	case <-m.Done():
	default:
		t.Error("Done of a MultiMutex never locked is closed")
	}
	assert.NoError(t, m.Err())
}

// existing counts the keys among keys that exist, one EXISTS each (they may
// lie in different cluster slots).
func existing(t *testing.T, rc rueidis.Client, keys []string) int64 {
	var n int64
	for _, k := range keys {
		e, err := rc.Do(context.Background(), rc.B().Exists().Key(k).Build()).AsInt64()
		require.NoError(t, err)
		n += e
	}
	return n
}

// A MultiMutex whose attempt is in flight when its Client closes holds none
// of its names once LockContext returns: those it took are released in
// Redis (the rueidis client is still open), not left to their 30 s lease.
// With WithSyncReplicas and the second name's replica paused, each attempt
// on the second name waits 500 ms for WAIT, on a connection of its own,
// while Close ends the Client's holds.
func TestMultiMutexCloseGivesBack(t *testing.T) {
	tg := clusterTarget(t)
	requireReal(t, tg, "WAIT")
	blocker, rc := newClient(t, tg)
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	var first, second string // taken in this order, on two masters
	base := freshName(t)
	for i := 0; second == ""; i++ {
		a, b := fmt.Sprintf("{a%d}%s", i, base), fmt.Sprintf("{b%d}%s", i, base)
		if layout.Slot(a) > layout.Slot(b) {
			a, b = b, a
		}
		ma, err := tg.Cluster.MasterForSlot(ctx, layout.Slot(a))
		require.NoError(t, err)
		mb, err := tg.Cluster.MasterForSlot(ctx, layout.Slot(b))
		require.NoError(t, err)
		if ma != mb {
			first, second = a, b
		}
	}
	b := blocker.NewMutex(second)
	require.NoError(t, b.LockContext(ctx))
	defer b.Unlock()
	replica := primaryReplica(ctx, t, tg, second)
	require.NotNil(t, replica)
	require.NoError(t, replica.Pause())
	t.Cleanup(func() { _ = replica.Resume() })

	c, _ := newClient(t, tg, redisync.WithSyncReplicas(1, 500*time.Millisecond))
	m := c.NewMultiMutex([]string{second, first})
	locked := inBackground(m.LockContext)
	require.Eventually(t, func() bool { return existing(t, rc, []string{first}) == 1 }, hang, time.Millisecond,
		"the first name was never taken")
	time.Sleep(700 * time.Millisecond) // the first attempt on the second name is over: it waits
	publish := rc.B().Spublish().Channel(layout.MutexOf(second).Channel).Message("0").Build()
	require.NoError(t, rc.Do(ctx, publish).Error()) // wakes it: the next attempt waits for WAIT
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, c.Close())
	assert.ErrorIs(t, <-locked, redisync.ErrClosed)
	assert.Zero(t, existing(t, rc, []string{first}), "the name taken before Close is still held")
}
