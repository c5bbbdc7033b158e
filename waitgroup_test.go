package redisync_test

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redisserver"
)

// Waiters in three Clients block while the counter is above zero and are all
// released by the Done that brings it to zero, given in a fourth.
func TestWaitGroupReleasesWaiters(t *testing.T) {
	forEachTopology(t, func(t *testing.T, tg *redisserver.Target) {
		name := "wg:" + freshName(t)
		owner, rc := newClient(t, tg)
		wg := owner.NewWaitGroup(name)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		require.NoError(t, wg.Add(ctx, 3))
		released := make(chan time.Time, 3)
		var waiters sync.WaitGroup
		for range 3 {
			c, _ := newClient(t, tg)
			w := c.NewWaitGroup(name)
			waiters.Go(func() {
				assert.NoError(t, w.Wait(ctx))
				released <- time.Now()
			})
		}
		for range 2 {
			require.NoError(t, wg.Done(ctx))
		}
		time.Sleep(100 * time.Millisecond)
		assert.Empty(t, released, "no waiter returns while the counter is 1")
		n, err := wg.Count(ctx)
		require.NoError(t, err)
		assert.EqualValues(t, 1, n)
		zero := time.Now()
		require.NoError(t, wg.Done(ctx))
		waiters.Wait()
		close(released)
		for at := range released {
			assert.Less(t, at.Sub(zero), 500*time.Millisecond, "released by the message, not by the 1 s poll")
		}
		exists, err := rc.Do(ctx, rc.B().Exists().Key(name).Build()).AsInt64()
		require.NoError(t, err)
		assert.Zero(t, exists, "zero is an absent key, as in Redisson")
		require.NoError(t, wg.Wait(ctx), "Wait on zero returns at once")
	})
}

// The counter never goes below zero: such an Add changes nothing.
func TestWaitGroupNegativeCounter(t *testing.T) {
	c, _ := newClient(t, standalone)
	name := "wg:" + freshName(t)
	wg := c.NewWaitGroup(name)
	ctx := context.Background()
	assert.ErrorIs(t, wg.Done(ctx), redisync.ErrNegativeCounter)
	require.NoError(t, wg.Add(ctx, 2))
	err := wg.Add(ctx, -3)
	assert.ErrorIs(t, err, redisync.ErrNegativeCounter)
	assert.ErrorContains(t, err, name)
	n, err := wg.Count(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 2, n, "unchanged")
	require.NoError(t, wg.Add(ctx, 0))
}

// A Wait whose ctx ends returns ctx.Err() and leaves no subscription.
func TestWaitGroupWaitGivesUp(t *testing.T) {
	t.Parallel() // waits for leases to run out: see redistest.Parallel
	forEachTopology(t, func(t *testing.T, tg *redisserver.Target) {
		c, _ := newClient(t, tg)
		name := "wg:" + freshName(t)
		wg := c.NewWaitGroup(name)
		require.NoError(t, wg.Add(context.Background(), 1))
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		assert.ErrorIs(t, wg.Wait(ctx), context.DeadlineExceeded)
		assert.Eventually(t, func() bool { return subscribers(t, tg, layout.WaitGroupOf(name).Channel) == 0 },
			5*time.Second, 10*time.Millisecond, "the waiter left the channel")
	})
}

// countDownScript is what a Java RCountDownLatch.countDown() sends, as
// Redisson's data format defines it: decrement, delete at zero or below, and
// publish "0" on the latch's channel at zero.
const countDownScript = `
local v = redis.call('decr', KEYS[1])
if v <= 0 then redis.call('del', KEYS[1]) end
if v == 0 then redis.call(ARGV[2], KEYS[2], ARGV[1]) end
return v`

// The raw protocol of Redisson's RCountDownLatch, both ways: a Java
// countDown() to zero releases a Go Wait, and a Go Done to zero publishes
// the message a Java await() waits for, deleting the counter it reads.
func TestWaitGroupRedissonInterop(t *testing.T) {
	forEachTopology(t, func(t *testing.T, tg *redisserver.Target) {
		c, rc := newClient(t, tg)
		name := "wg:" + freshName(t)
		l := layout.WaitGroupOf(name)
		wg := c.NewWaitGroup(name)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()

		// Java counts down.
		require.NoError(t, rc.Do(ctx, rc.B().Set().Key(l.Key).Value("1").Build()).Error()) // trySetCount(1)
		waited := make(chan error, 1)
		go func() { waited <- wg.Wait(ctx) }()
		time.Sleep(100 * time.Millisecond)
		require.Empty(t, waited)
		require.NoError(t, rc.Do(ctx, rc.B().Eval().Script(countDownScript).Numkeys(2).Key(l.Key, l.Channel).
			Arg("0", publishCommand(tg)).Build()).Error())
		select {
		case err := <-waited:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Fatal("a Java countDown to zero did not release the Go Wait")
		}

		// Go counts down; the Java side listens on the latch's channel.
		require.NoError(t, wg.Add(ctx, 1))
		got := make(chan string, 1)
		stop := subscribe(t, newRueidis(t, tg), l.Channel, func(m rueidis.PubSubMessage) { got <- m.Message })
		defer stop()
		require.NoError(t, wg.Done(ctx))
		select {
		case m := <-got:
			assert.Equal(t, "0", m, "Redisson's zero message")
		case <-time.After(5 * time.Second):
			t.Fatal("no message on " + l.Channel)
		}
		n, err := rc.Do(ctx, rc.B().Exists().Key(l.Key).Build()).AsInt64()
		require.NoError(t, err)
		assert.Zero(t, n, "Java's getCount() reads 0")
	})
}

// Names whose Redisson channel would land in another slot are refused.
func TestWaitGroupNames(t *testing.T) {
	c, _ := newClient(t, standalone)
	assert.Panics(t, func() { c.NewWaitGroup("{batch}:7") })
	assert.Panics(t, func() { c.NewWaitGroup("") })
	assert.Equal(t, "batch:7", c.NewWaitGroup("batch:7").Name())
}

// The counter is a Redis integer, exact across int64: an Add above 2^53 (past
// the integers a Lua number holds exactly) or above 10^17 (which Lua numbers
// print with an exponent) is stored as its digits, and one that would
// overflow is refused, changing nothing.
func TestWaitGroupLargeCounter(t *testing.T) {
	ctx := context.Background()
	c, rc := newClient(t, standalone)
	name := "wg:" + freshName(t)
	wg := c.NewWaitGroup(name)
	stored := func() string {
		t.Helper()
		v, err := rc.Do(ctx, rc.B().Get().Key(name).Build()).ToString()
		require.NoError(t, err)
		return v
	}
	require.NoError(t, wg.Add(ctx, 1<<53+1))
	assert.Equal(t, "9007199254740993", stored())
	require.NoError(t, wg.Add(ctx, 1e17))
	assert.Equal(t, "109007199254740993", stored())
	require.NoError(t, wg.Add(ctx, -(1<<53)))
	assert.Equal(t, "100000000000000001", stored())
	assert.ErrorContains(t, wg.Add(ctx, math.MaxInt64), "overflow")
	n, err := wg.Count(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, int64(1e17+1), n, "unchanged by the refused Add")
	assert.ErrorIs(t, wg.Add(ctx, -1e17-2), redisync.ErrNegativeCounter)
	require.NoError(t, wg.Add(ctx, -1e17-1))
	require.NoError(t, wg.Wait(ctx), "the counter is zero")
}
