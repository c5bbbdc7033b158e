package ctxlock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-redisync/redisync/internal/ctxlock"
)

// The owner's call lock excludes, whether its callers can give up or not, and
// a caller whose context ends stops waiting without breaking it.
func TestMutexExcludes(t *testing.T) {
	var l ctxlock.Mutex
	var inside, most, done atomic.Int32
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 300 {
				ctx := context.Background()
				cancel := func() {}
				if g%2 == 0 {
					// Some give up at once, some soon, some never.
					ctx, cancel = context.WithTimeout(ctx, time.Duration(i%3)*50*time.Microsecond)
				}
				err := l.Lock(ctx)
				cancel()
				if err != nil {
					require.ErrorIs(t, err, context.DeadlineExceeded)
					continue
				}
				if n := inside.Add(1); n > most.Load() {
					most.Store(n)
				}
				time.Sleep(time.Duration(i%4) * 10 * time.Microsecond)
				inside.Add(-1)
				done.Add(1)
				l.Unlock()
			}
		})
	}
	wg.Wait()
	assert.EqualValues(t, 1, most.Load(), "two callers inside")
	assert.GreaterOrEqual(t, done.Load(), int32(8*300), "every caller without a deadline got in each time")
	require.True(t, l.TryLock(), "the lock is free at the end")
	l.Unlock()
}

// A caller stops waiting when its context ends, and TryLock fails at once,
// while another holds the lock; once it is unlocked, a waiter gets it.
func TestMutexHonoursContext(t *testing.T) {
	var l ctxlock.Mutex
	require.NoError(t, l.Lock(context.Background()))
	assert.False(t, l.TryLock())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	assert.ErrorIs(t, l.Lock(ctx), context.DeadlineExceeded)
	assert.Less(t, time.Since(start), time.Second)
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), hang)
		defer cancel()
		got <- l.Lock(ctx)
	}()
	time.Sleep(20 * time.Millisecond)
	l.Unlock()
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(hang):
		t.Fatal("the waiter was not let in after the unlock")
	}
	l.Unlock()
}

// An unlock hands the lock to a caller waiting with a context: a loop of
// TryLock and Unlock, as a TryAcquire loop through one handle makes, does
// not keep it from that caller (before, the waiter was only told to try
// again, and the loop's next TryLock came first).
func TestMutexHandsToWaiter(t *testing.T) {
	var l ctxlock.Mutex
	require.NoError(t, l.Lock(context.Background()))
	got, leave := make(chan error, 1), make(chan struct{})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), hang)
		defer cancel()
		err := l.Lock(ctx)
		got <- err
		if err == nil {
			<-leave
			l.Unlock()
		}
	}()
	time.Sleep(50 * time.Millisecond) // the waiter registers
	l.Unlock()
	tried := 0
	for ; tried < 1000; tried++ {
		if l.TryLock() {
			l.Unlock()
			t.Fatalf("TryLock %d took the lock the unlock handed to the waiter", tried+1)
		}
	}
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(hang):
		t.Fatal("the waiter was not let in after the unlock")
	}
	close(leave)
	require.Eventually(t, l.TryLock, hang, time.Millisecond, "the waiter's unlock frees the lock")
	l.Unlock()
}

// A waiter whose context ends as the lock is handed to it passes the lock on.
func TestMutexCancelPassesOn(t *testing.T) {
	var l ctxlock.Mutex
	for range 200 {
		require.NoError(t, l.Lock(context.Background()))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- l.Lock(ctx) }()
		time.Sleep(20 * time.Microsecond)
		go cancel()
		l.Unlock()
		if err := <-done; err == nil {
			l.Unlock()
		}
		cancel()
		ctx2, cancel2 := context.WithTimeout(context.Background(), hang)
		require.NoError(t, l.Lock(ctx2), "the lock is free again")
		cancel2()
		l.Unlock()
	}
}

// hang bounds a wait that only a bug makes long.
const hang = 10 * time.Second

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
