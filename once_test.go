package redisync_test

import (
	"context"
	"errors"
	"fmt"
	"os"
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

// childOnce makes a child process run a Once's function that never returns.
const childOnce = "REDISYNC_TEST_ONCE"

// f runs exactly once across 4 Clients of 8 goroutines each: a counter in
// Redis, incremented inside f, is the oracle; every Do returns nil, and the
// waiters return within 500 ms of f's success (woken, not polling).
func TestOnceRunsOnce(t *testing.T) {
	forEachTopology(t, func(t *testing.T, tg *redisserver.Target) {
		name := "once:" + freshName(t)
		oracle := layout.Aux("oracle", name)
		var clients []*redisync.Client
		var rc rueidis.Client
		for range 4 {
			var c *redisync.Client
			c, rc = newClient(t, tg)
			clients = append(clients, c)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var succeededAt atomic.Int64 // f's return, in ns since start
		start := time.Now()
		lag := make(chan time.Duration, 32)
		var wg sync.WaitGroup
		for _, c := range clients {
			o := c.NewOnce(name)
			for range 8 {
				wg.Go(func() {
					err := o.Do(ctx, func(ctx context.Context) error {
						if err := rc.Do(ctx, rc.B().Incr().Key(oracle).Build()).Error(); err != nil {
							return err
						}
						time.Sleep(50 * time.Millisecond) // the others queue up meanwhile
						succeededAt.Store(int64(time.Since(start)))
						return nil
					})
					assert.NoError(t, err)
					lag <- time.Since(start) - time.Duration(succeededAt.Load())
				})
			}
		}
		wg.Wait()
		close(lag)
		runs, err := rc.Do(ctx, rc.B().Get().Key(oracle).Build()).AsInt64()
		require.NoError(t, err)
		assert.EqualValues(t, 1, runs, "f ran once")
		var worst time.Duration
		for d := range lag {
			worst = max(worst, d)
		}
		t.Logf("the last waiter returned %v after f succeeded", worst)
		// Generous, for a loaded machine (115 ms seen under -race on
		// miniredis), and still well below the second a waiter would sleep
		// without the wake-up (the poll bound; the claim's lease is 30 s).
		assert.Less(t, worst, 500*time.Millisecond, "waiters wake on f's success")
		done, err := clients[0].NewOnce(name).IsDone(ctx)
		require.NoError(t, err)
		assert.True(t, done)
		require.NoError(t, clients[1].NewOnce(name).Do(ctx, func(context.Context) error {
			t.Error("f ran after the Once was done")
			return nil
		}))
	})
}

// A failing f gives its caller the error and leaves the Once not done; a
// waiting caller in another Client runs f again.
func TestOnceRetriesAfterFailure(t *testing.T) {
	forEachTopology(t, func(t *testing.T, tg *redisserver.Target) {
		a, _ := newClient(t, tg)
		b, _ := newClient(t, tg)
		name := "once:" + freshName(t)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		failure := errors.New("migration failed")
		running := make(chan struct{})
		var second atomic.Int32
		errA := make(chan error, 1)
		go func() {
			errA <- a.NewOnce(name).Do(ctx, func(context.Context) error {
				close(running)
				time.Sleep(100 * time.Millisecond)
				return failure
			})
		}()
		<-running
		err := b.NewOnce(name).Do(ctx, func(context.Context) error {
			second.Add(1)
			return nil
		})
		require.NoError(t, err)
		assert.ErrorIs(t, <-errA, failure, "the failing caller gets f's error")
		assert.EqualValues(t, 1, second.Load(), "the waiter ran f again")
	})
}

// The process running f is killed: its claim expires within its lease and a
// waiting caller runs f.
func TestOnceRunnerKilled(t *testing.T) {
	t.Parallel() // waits for leases to run out: see redistest.Parallel
	forEachTopology(t, func(t *testing.T, tg *redisserver.Target) {
		requireReal(t, tg, "a child process")
		name := "once:" + freshName(t)
		const lease = time.Second
		child := startChildSaying(t, tg, name, lease, "running", childOnce+"=1")
		c, _ := newClient(t, tg)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		require.NoError(t, child.Process.Kill())
		killed := time.Now()
		ran := false
		require.NoError(t, c.NewOnce(name).Do(ctx, func(context.Context) error {
			ran = true
			return nil
		}))
		took := time.Since(killed)
		t.Logf("f ran %v after the runner was killed (lease %v)", took, lease)
		assert.True(t, ran)
		assert.Less(t, took, lease+time.Second, "within the lease (and a generous margin)")
	})
}

// runOnceChild is a child process's body: run the Once name's function and
// never return from it.
func runOnceChild(c *redisync.Client, name string) int {
	err := c.NewOnce(name).Do(context.Background(), func(context.Context) error {
		fmt.Println("running")
		select {} // until SIGKILL
	})
	fmt.Fprintln(os.Stderr, "child:", err)
	return 2
}

// A waiter whose ctx ends returns ctx.Err() and leaves no subscription and
// no claim; the runner goes on.
func TestOnceWaiterGivesUp(t *testing.T) {
	t.Parallel() // waits for leases to run out: see redistest.Parallel
	forEachTopology(t, func(t *testing.T, tg *redisserver.Target) {
		a, _ := newClient(t, tg)
		b, rc := newClient(t, tg)
		name := "once:" + freshName(t)
		l := layout.OnceOf(name)
		running, finish := make(chan struct{}), make(chan struct{})
		errA := make(chan error, 1)
		go func() {
			errA <- a.NewOnce(name).Do(context.Background(), func(context.Context) error {
				close(running)
				<-finish
				return nil
			})
		}()
		<-running
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		err := b.NewOnce(name).Do(ctx, func(context.Context) error {
			t.Error("f ran while another caller ran it")
			return nil
		})
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Eventually(t, func() bool { return subscribers(t, tg, l.Channel) == 0 },
			5*time.Second, 10*time.Millisecond, "the waiter left the channel")
		fields, err := rc.Do(context.Background(), rc.B().Hkeys().Key(l.Claim).Build()).AsStrSlice()
		require.NoError(t, err)
		assert.Len(t, fields, 1, "the runner's claim alone")
		close(finish)
		require.NoError(t, <-errA)
	})
}

// f's context is cancelled when the claim is lost (force-unlocked), with a
// cause wrapping ErrLockLost; a caller waiting in another Client then runs f.
func TestOnceLostClaimCancelsF(t *testing.T) {
	c, _ := newClient(t, standalone)
	other, _ := newClient(t, standalone)
	name := "once:" + freshName(t)
	o := c.NewOnce(name)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var cause error
	running := make(chan struct{})
	errA := make(chan error, 1)
	go func() {
		errA <- o.Do(ctx, func(fctx context.Context) error {
			close(running)
			<-fctx.Done()
			cause = context.Cause(fctx)
			return fctx.Err()
		})
	}()
	<-running
	ok, err := o.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.ErrorIs(t, <-errA, context.Canceled)
	assert.ErrorIs(t, cause, redisync.ErrLockLost)
	assert.ErrorIs(t, cause, redisync.ErrForceUnlocked)
	assert.ErrorIs(t, o.Err(), redisync.ErrLockLost, "Err reports the lost claim")
	ran := false
	require.NoError(t, other.NewOnce(name).Do(ctx, func(context.Context) error {
		ran = true
		return nil
	}))
	assert.True(t, ran, "the Once was not done")
}

// A claim lost while f runs does not undo f's success: Do records it anyway.
func TestOnceSuccessRecordedAfterLoss(t *testing.T) {
	c, rc := newClient(t, standalone)
	name := "once:" + freshName(t)
	o := c.NewOnce(name, redisync.WithLease(100*time.Millisecond))
	ctx := context.Background()
	require.NoError(t, o.Do(ctx, func(context.Context) error {
		time.Sleep(300 * time.Millisecond) // the fixed lease runs out
		return nil
	}))
	assert.ErrorIs(t, o.Err(), redisync.ErrLockLost)
	done, err := o.IsDone(ctx)
	require.NoError(t, err)
	assert.True(t, done)
	n, err := rc.Do(ctx, rc.B().Exists().Key(layout.OnceOf(name).Claim).Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n)
}

// A panicking f leaves the Once not done and its claim released; Do panics
// with f's value. Reset forgets a success.
func TestOncePanicAndReset(t *testing.T) {
	c, _ := newClient(t, standalone)
	o := c.NewOnce("once:" + freshName(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	assert.PanicsWithValue(t, "boom", func() {
		_ = o.Do(ctx, func(context.Context) error { panic("boom") })
	})
	runs := 0
	f := func(context.Context) error {
		runs++
		return nil
	}
	require.NoError(t, o.Do(ctx, f), "the claim was released")
	require.NoError(t, o.Do(ctx, f))
	assert.Equal(t, 1, runs)
	require.NoError(t, o.Reset(ctx))
	done, err := o.IsDone(ctx)
	require.NoError(t, err)
	assert.False(t, done)
	require.NoError(t, o.Do(ctx, f))
	assert.Equal(t, 2, runs)
}
