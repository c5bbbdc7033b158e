package redisync_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync/internal/redistest"
)

// Goroutines sharing one handle hand the hold to each other without a round
// trip to Redis, yet a waiter in another Client still gets its turn while
// they go on: after at most 64 handovers (or 1 ms) the hold goes back to Redis.
func TestMutexLocalHandover(t *testing.T) {
	requireReal(t, standalone, "INFO commandstats")
	name := freshName(t)
	c, rc := newClient(t, standalone)
	m := c.NewMutex(name)
	var ex exclusion
	var sections atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	before := redistest.CommandCalls(t, rc, "evalsha")
	for range 16 {
		wg.Go(func() { ex.hammer(m, stop, &sections) })
	}
	time.Sleep(200 * time.Millisecond) // the local goroutines are busy
	other, _ := newClient(t, standalone)
	remote := other.NewMutex(name)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	began := time.Now()
	err := remote.LockContext(ctx)
	waited := time.Since(began)
	close(stop)
	if err == nil {
		remote.Unlock()
	}
	wg.Wait()
	require.NoError(t, err, "the other Client starved while the local goroutines handed the lock around")
	calls := redistest.CommandCalls(t, rc, "evalsha") - before
	t.Logf("%d critical sections of 16 goroutines sharing a handle with %d script calls; another Client got in after %v",
		sections.Load(), calls, waited)
	assert.EqualValues(t, 1, ex.worst.Load(), "two goroutines inside at once")
	assert.Less(t, calls, sections.Load(), "handovers should spare most round trips")
}

// A caller that gives up while queued for a handover is not handed the hold;
// the release goes to Redis instead.
func TestMutexHandoverToLeaver(t *testing.T) {
	name := freshName(t)
	c, _ := newClient(t, standalone)
	m := c.NewMutex(name)
	m.Lock()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	assert.Equal(t, context.DeadlineExceeded, m.LockContext(ctx))
	m.Unlock()
	locked, err := m.IsLocked(context.Background())
	require.NoError(t, err)
	assert.False(t, locked, "the hold was handed to a caller that had left")
	select {
	case <-m.Done():
	default:
		t.Fatal("Done not closed after the last Unlock")
	}
}

// A FencedMutex never hands a hold over locally: each acquisition takes a
// new token from Redis.
func TestFencedMutexNoLocalHandover(t *testing.T) {
	name := freshName(t)
	c, _ := newClient(t, standalone)
	fm := c.NewFencedMutex(name)
	var mu sync.Mutex
	var grants []grant
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 25 {
				began := time.Now()
				token, err := fm.LockToken(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				done := time.Now()
				fm.Unlock()
				mu.Lock()
				grants = append(grants, grant{began: began, done: done, token: token})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	checkGrants(t, grants)
}

// Handovers in a row are bounded in time as well as in number: a hold kept
// longer than 1 ms since it came from Redis is released there, not handed
// to the local caller waiting for it, so every one of these 2 ms critical
// sections costs an acquire and a release in Redis.
func TestMutexHandoverTimeBound(t *testing.T) {
	requireReal(t, standalone, "INFO commandstats")
	name := freshName(t)
	c, rc := newClient(t, standalone)
	m := c.NewMutex(name)
	const goroutines, rounds = 4, 10
	before := redistest.CommandCalls(t, rc, "evalsha")
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range rounds {
				m.Lock()
				time.Sleep(2 * time.Millisecond) // never shorter than asked
				m.Unlock()
			}
		})
	}
	wg.Wait()
	calls := redistest.CommandCalls(t, rc, "evalsha") - before
	t.Logf("%d critical sections of 2 ms with %d script calls", goroutines*rounds, calls)
	assert.GreaterOrEqual(t, calls, int64(2*goroutines*rounds), "a hold older than 1 ms was handed over locally")
}
