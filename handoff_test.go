package redisync_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/redistest"
)

// Goroutines sharing one handle hand the hold to each other without a round
// trip to Redis, yet a waiter in another Client still gets its turn while
// they go on: after at most 64 handovers (or 1 ms) the hold goes back to Redis.
func TestMutexLocalHandoff(t *testing.T) {
	requireReal(t, standalone, "INFO commandstats")
	c, rc := newClient(t, standalone)
	m := c.NewMutex(t.Name())
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
	remote := other.NewMutex(t.Name())
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
func TestMutexHandoffToLeaver(t *testing.T) {
	c, _ := newClient(t, standalone)
	m := c.NewMutex(t.Name())
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
func TestFencedMutexNoLocalHandoff(t *testing.T) {
	c, _ := newClient(t, standalone)
	fm := c.NewFencedMutex(t.Name())
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

// parkedMutex returns a Mutex of a new Client (and its rueidis client) whose
// hold is parked: it was unlocked while a caller of the handle was arriving.
func parkedMutex(t *testing.T) (*redisync.Mutex, rueidis.Client) {
	t.Cleanup(redisync.LongHandoffsForTest()) // the steps may take over 1 ms
	c, rc := newClient(t, standalone)
	m := c.NewMutex(t.Name())
	m.Lock()
	leave := redisync.ArriveForTest(m)
	m.Unlock()
	leave()
	return m, rc
}

// An Unlock while a caller of the same handle is on its way to the handover
// queue (blocked behind the holder's round trip) leaves the hold parked for
// it: the lock stays held in Redis, the next Lock takes it without a script
// call, and an Unlock of the parked hold is an unlock of an unlocked mutex.
func TestMutexParkedHandoff(t *testing.T) {
	requireReal(t, standalone, "INFO commandstats")
	ctx := context.Background()
	m, rc := parkedMutex(t)
	locked, err := m.IsLocked(ctx)
	require.NoError(t, err)
	assert.True(t, locked, "released in Redis although a caller was arriving")
	assert.PanicsWithValue(t, "redisync: unlock of unlocked mutex", m.Unlock, "Unlock of a parked hold")

	before := redistest.CommandCalls(t, rc, "evalsha")
	m.Lock()
	assert.Equal(t, before, redistest.CommandCalls(t, rc, "evalsha"), "taking a parked hold called a script")
	select {
	case <-m.Done():
		t.Fatal("Done closed while held")
	default:
	}
	m.Unlock() // nobody arriving: released in Redis
	locked, err = m.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked)
	assert.NoError(t, m.Err())
}

// A parked hold that ends meanwhile (here by ForceUnlock) is not handed to
// the arriving caller: it acquires in Redis and gets a hold of its own.
func TestMutexParkedHoldEnded(t *testing.T) {
	ctx := context.Background()
	m, _ := parkedMutex(t)
	forced, err := m.ForceUnlock(ctx)
	require.NoError(t, err)
	require.True(t, forced)

	lockCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	require.NoError(t, m.LockContext(lockCtx))
	locked, err := m.IsLocked(ctx)
	require.NoError(t, err)
	assert.True(t, locked, "the ended parked hold was taken instead of the lock")
	assert.NoError(t, m.Err())
	select {
	case <-m.Done():
		t.Fatal("Done of the new hold is closed")
	default:
	}
	m.Unlock()
}

// A FencedMutex never parks: every acquisition takes its token from Redis.
func TestFencedMutexNoPark(t *testing.T) {
	defer redisync.LongHandoffsForTest()() // the steps below may take over 1 ms
	c, _ := newClient(t, standalone)
	ctx := context.Background()
	fm := c.NewFencedMutex(t.Name())
	first, err := fm.LockToken(ctx)
	require.NoError(t, err)
	leave := redisync.ArriveForTest(&fm.Mutex)
	fm.Unlock()
	leave()
	locked, err := fm.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked, "a FencedMutex hold was kept for a local caller")
	second, err := fm.LockToken(ctx)
	require.NoError(t, err)
	assert.Greater(t, second, first)
	fm.Unlock()
}

// Handovers in a row are bounded in time as well as in number: a hold kept
// longer than 1 ms since it came from Redis is released there, not handed
// to the local caller waiting for it, so every one of these 2 ms critical
// sections costs an acquire and a release in Redis.
func TestMutexHandoffTimeBound(t *testing.T) {
	requireReal(t, standalone, "INFO commandstats")
	c, rc := newClient(t, standalone)
	m := c.NewMutex(t.Name())
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
