package redisync_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redisserver"
)

// childElection makes a child process campaign and lead until killed.
const childElection = "REDISYNC_TEST_ELECTION"

// Eight campaigners in 4 Clients each lead three times: never two leaders at
// once (counted inside the leadership), Leader reads each one's value while
// it leads, and a resignation elects a waiting campaigner promptly.
func TestElectionOneLeader(t *testing.T) {
	t.Parallel() // waits for leases to run out: see redistest.Parallel
	forEachTopology(t, func(t *testing.T, tg *redisserver.Target) {
		name := "election:" + freshName(t)
		var clients []*redisync.Client
		for range 4 {
			c, _ := newClient(t, tg)
			clients = append(clients, c)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var leaders, terms atomic.Int32
		var resigned atomic.Int64 // the latest Resign's return, ns since start
		start := time.Now()
		lags := make(chan time.Duration, 24)
		var wg sync.WaitGroup
		for i := range 8 {
			e := clients[i%4].NewElection(name)
			wg.Go(func() {
				for round := range 3 {
					value := fmt.Sprintf("candidate %d, round %d", i, round)
					if !assert.NoError(t, e.Campaign(ctx, value)) {
						return
					}
					if at := resigned.Load(); at != 0 {
						lags <- time.Since(start) - time.Duration(at)
					}
					assert.EqualValues(t, 1, leaders.Add(1), "one leader at a time")
					terms.Add(1)
					leader, err := e.Leader(ctx)
					assert.NoError(t, err)
					assert.Equal(t, value, leader)
					time.Sleep(10 * time.Millisecond)
					leaders.Add(-1)
					resigned.Store(int64(time.Since(start)))
					assert.NoError(t, e.Resign(ctx))
					assert.NoError(t, e.Err())
				}
			})
		}
		wg.Wait()
		close(lags)
		assert.EqualValues(t, 24, terms.Load())
		var lag []time.Duration
		for d := range lags {
			lag = append(lag, d)
		}
		slices.Sort(lag)
		require.NotEmpty(t, lag)
		t.Logf("from a resignation to the next leader: p50 %v, max %v (%d handovers)", lag[len(lag)/2], lag[len(lag)-1], len(lag))
		assert.Less(t, lag[len(lag)-1], 2*time.Second, "woken by the resignation, not the 30 s lease")
		_, err := clients[0].NewElection(name).Leader(ctx)
		assert.ErrorIs(t, err, redisync.ErrNoLeader)
	})
}

// The leader's process is killed: a campaigner in another process is elected
// within the lease, and an observer sees the dead leader's value, then the
// new one's.
func TestElectionLeaderKilled(t *testing.T) {
	t.Parallel() // waits for leases to run out: see redistest.Parallel
	forEachTopology(t, func(t *testing.T, tg *redisserver.Target) {
		requireReal(t, tg, "a child process")
		name := "election:" + freshName(t)
		const lease = time.Second
		child := startChildSaying(t, tg, name, lease, "leading", childElection+"=1")
		c, _ := newClient(t, tg)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		values := c.NewElection(name).Observe(ctx)
		assert.Equal(t, "child", <-values)
		require.NoError(t, child.Process.Kill())
		killed := time.Now()
		e := c.NewElection(name)
		require.NoError(t, e.Campaign(ctx, "successor"))
		took := time.Since(killed)
		t.Logf("elected %v after the leader was killed (lease %v)", took, lease)
		assert.Less(t, took, lease+time.Second, "within the lease (and a generous margin)")
		assert.Equal(t, "successor", <-values)
		require.NoError(t, e.Resign(ctx))
	})
}

// runElectionChild is a child process's body: lead the Election name with
// the value "child" until killed.
func runElectionChild(c *redisync.Client, name string) int {
	if err := c.NewElection(name).Campaign(context.Background(), "child"); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	fmt.Println("leading")
	select {} // until SIGKILL
}

// An observer receives the current value, then each proclamation and each new
// leader in order; one that does not read for a while receives the latest
// value when it reads again.
func TestElectionObserve(t *testing.T) {
	forEachTopology(t, func(t *testing.T, tg *redisserver.Target) {
		a, _ := newClient(t, tg)
		b, _ := newClient(t, tg)
		name := "election:" + freshName(t)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		first, second := a.NewElection(name), b.NewElection(name)
		require.NoError(t, first.Campaign(ctx, "v0"))
		octx, stop := context.WithCancel(ctx)
		values := b.NewElection(name).Observe(octx)
		next := func() string {
			select {
			case v := <-values:
				return v
			case <-ctx.Done():
				t.Fatal("no value observed")
				return ""
			}
		}
		assert.Equal(t, "v0", next(), "the current value")
		for i := 1; i <= 3; i++ {
			v := "v" + strconv.Itoa(i)
			require.NoError(t, first.Proclaim(ctx, v))
			assert.Equal(t, v, next(), "each proclamation, in order")
		}
		for i := 4; i <= 8; i++ { // not read meanwhile
			require.NoError(t, first.Proclaim(ctx, "v"+strconv.Itoa(i)))
		}
		var seen []string
		for len(seen) == 0 || seen[len(seen)-1] != "v8" {
			seen = append(seen, next())
		}
		t.Logf("a reader that fell behind received %v", seen)
		assert.True(t, slices.IsSorted(seen), "in order")
		elected := make(chan error, 1)
		go func() { elected <- second.Campaign(ctx, "w0") }()
		require.NoError(t, first.Resign(ctx))
		require.NoError(t, <-elected)
		assert.Equal(t, "w0", next(), "the new leader's value")
		require.NoError(t, second.Campaign(ctx, "w1"), "a leader's campaign proclaims")
		assert.Equal(t, "w1", next())
		stop()
		for range values { // closed when ctx ends
		}
		require.NoError(t, second.Resign(ctx))
	})
}

// An Observe running when its Client closes ends: its channel is closed,
// though its context has not ended.
func TestElectionObserveEndsWithItsClient(t *testing.T) {
	leader, _ := newClient(t, standalone)
	observer, _ := newClient(t, standalone)
	name := "election:" + freshName(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e := leader.NewElection(name)
	require.NoError(t, e.Campaign(ctx, "v0"))
	defer func() { require.NoError(t, e.Resign(ctx)) }()
	values := observer.NewElection(name).Observe(ctx)
	select {
	case v := <-values:
		require.Equal(t, "v0", v)
	case <-ctx.Done():
		t.Fatal("no value observed")
	}
	require.NoError(t, observer.Close())
	select {
	case v, open := <-values:
		assert.False(t, open, "a value after Close: %q", v)
	case <-time.After(hang):
		t.Fatal("Observe's channel stayed open after its Client closed")
	}
}

// Proclaim needs leadership, Leader a leader; Resign without leadership is a
// no-op; a campaign that gives up leaves no trace.
func TestElectionErrors(t *testing.T) {
	t.Parallel() // waits for leases to run out: see redistest.Parallel
	forEachTopology(t, func(t *testing.T, tg *redisserver.Target) {
		a, _ := newClient(t, tg)
		b, rc := newClient(t, tg)
		name := "election:" + freshName(t)
		l := layout.ElectionOf(name)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		leader, waiter := a.NewElection(name), b.NewElection(name)
		_, err := leader.Leader(ctx)
		assert.ErrorIs(t, err, redisync.ErrNoLeader)
		assert.ErrorIs(t, leader.Proclaim(ctx, "x"), redisync.ErrNotLeader)
		assert.NoError(t, leader.Resign(ctx))
		require.NoError(t, leader.Campaign(ctx, "a"))
		assert.ErrorIs(t, waiter.Proclaim(ctx, "b"), redisync.ErrNotLeader)

		wctx, wcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer wcancel()
		assert.ErrorIs(t, waiter.Campaign(wctx, "b"), context.DeadlineExceeded)
		assert.Eventually(t, func() bool { return subscribers(t, tg, l.Channel) == 0 },
			5*time.Second, 10*time.Millisecond, "the campaigner left the channel")
		m, err := rc.Do(ctx, rc.B().Hgetall().Key(l.Key).Build()).AsStrMap()
		require.NoError(t, err)
		assert.Equal(t, "a", layout.ParseLeadership(m).Value)
		assert.Len(t, m, 3, "the leader's hold, value and rev alone")

		require.NoError(t, leader.Resign(ctx))
		assert.ErrorIs(t, leader.Proclaim(ctx, "x"), redisync.ErrNotLeader)
		assert.NoError(t, leader.Resign(ctx), "twice")
		assert.NoError(t, leader.Err())
	})
}

// A leadership deleted by someone else, or force-unlocked, is reported lost:
// Done closes, Err wraps ErrLockLost, Proclaim fails; another campaigner is
// elected.
func TestElectionLost(t *testing.T) {
	a, rc := newClient(t, standalone)
	b, _ := newClient(t, standalone)
	name := "election:" + freshName(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e := a.NewElection(name)
	require.NoError(t, e.Campaign(ctx, "a"))
	require.NoError(t, rc.Do(ctx, rc.B().Del().Key(layout.ElectionOf(name).Key).Build()).Error())
	err := e.Proclaim(ctx, "a2")
	assert.ErrorIs(t, err, redisync.ErrNotLeader)
	assert.ErrorIs(t, err, redisync.ErrLockLost)
	assert.ErrorIs(t, err, redisync.ErrHoldGone)
	<-e.Done()
	assert.ErrorIs(t, e.Err(), redisync.ErrLockLost)
	assert.ErrorIs(t, e.Resign(ctx), redisync.ErrLockLost, "Resign acknowledges the loss")

	require.NoError(t, e.Campaign(ctx, "a3"))
	other := b.NewElection(name)
	elected := make(chan error, 1)
	go func() { elected <- other.Campaign(ctx, "b") }()
	ok, err := a.NewElection(name).ForceUnlock(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	<-e.Done()
	assert.ErrorIs(t, e.Err(), redisync.ErrForceUnlocked)
	require.NoError(t, <-elected)
	v, err := other.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "b", v)
	require.NoError(t, other.Resign(ctx))
}
