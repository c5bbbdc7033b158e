package redisync_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
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
	"github.com/go-redisync/redisync/internal/scripts"
)

// semQueued returns the length of the queue of the semaphore name.
func semQueued(t testing.TB, rc rueidis.Client, name string) int64 {
	t.Helper()
	n, err := rc.Do(context.Background(), rc.B().Zcard().Key(layout.Aux(layout.SemQueuePrefix, name)).Build()).AsInt64()
	require.NoError(t, err)
	return n
}

// waitSemQueued waits until the queue of the semaphore name has n waiters.
func waitSemQueued(t testing.TB, rc rueidis.Client, name string, n int64) {
	t.Helper()
	require.Eventually(t, func() bool { return semQueued(t, rc, name) == n }, hang, time.Millisecond,
		"queue of %s never reached %d", name, n)
}

// semHolders returns the holders hash of the semaphore name.
func semHolders(t testing.TB, rc rueidis.Client, name string) map[string]string {
	t.Helper()
	m, err := rc.Do(context.Background(), rc.B().Hgetall().Key(layout.Aux(layout.SemHoldersPrefix, name)).Build()).AsStrMap()
	require.NoError(t, err)
	return m
}

// overAdmit runs clients x goroutines workers that acquire random weights
// 1..3 of a semaphore of size 5, rounds times each, and fails if the weights
// inside ever sum above 5.
func overAdmit(t *testing.T, tg *redisserver.Target, name string, clients, goroutines, rounds int) {
	const size = 5
	var inside, worst, total atomic.Int64
	var wg sync.WaitGroup
	for ci := range clients {
		c, _ := newClient(t, tg)
		for g := range goroutines {
			s := c.NewSemaphore(name, size)
			wg.Go(func() {
				for range rounds {
					n := 1 + rand.Int64N(3)
					ctx, cancel := context.WithTimeout(context.Background(), hang)
					err := s.Acquire(ctx, n)
					cancel()
					if err != nil {
						t.Errorf("client %d goroutine %d: %v", ci, g, err)
						return
					}
					now := inside.Add(n)
					for w := worst.Load(); now > w && !worst.CompareAndSwap(w, now); w = worst.Load() {
					}
					total.Add(1)
					time.Sleep(time.Millisecond) // hold a while, so that holds overlap
					inside.Add(-n)
					s.Release(n)
				}
			})
		}
	}
	wg.Wait()
	assert.LessOrEqual(t, worst.Load(), int64(size), "most weight seen inside at once")
	assert.EqualValues(t, clients*goroutines*rounds, total.Load(), "every acquire finished")
}

func TestSemaphoreNeverOverAdmits(t *testing.T) {
	t.Parallel() // waits for leases to run out: see redistest.Parallel
	forEachTopologyAtOnce(t, testSemaphoreNeverOverAdmits)
}

func testSemaphoreNeverOverAdmits(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	start := time.Now()
	rounds := scaled(tg, 25)
	overAdmit(t, tg, name, 4, 8, rounds)
	t.Logf("%d weighted acquisitions by 4 Clients x 8 goroutines in %v", 4*8*rounds, time.Since(start))
}

// A request for all 5 permits queued behind held permits is served before
// later requests for 1, although those would fit at once.
func TestSemaphoreFIFONoStarvation(t *testing.T) { forEachTopology(t, testSemaphoreFIFONoStarvation) }

func testSemaphoreFIFONoStarvation(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	c, rc := newClient(t, tg)
	holder := c.NewSemaphore(name, 5)
	require.NoError(t, holder.Acquire(context.Background(), 3))
	served := make(chan string, 3)
	var wg sync.WaitGroup
	start := func(label string, n int64) *redisync.Semaphore {
		oc, _ := newClient(t, tg)
		s := oc.NewSemaphore(name, 5)
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), hang)
			defer cancel()
			if err := s.Acquire(ctx, n); err != nil {
				t.Errorf("%s: %v", label, err)
				return
			}
			served <- label
		})
		return s
	}
	big := start("big", 5)
	waitSemQueued(t, rc, name, 1)
	small1 := start("small1", 1)
	waitSemQueued(t, rc, name, 2)
	small2 := start("small2", 1)
	waitSemQueued(t, rc, name, 3)
	assert.False(t, holder.TryAcquire(1), "TryAcquire must fail while others are queued")
	select {
	case who := <-served:
		t.Fatalf("%s served while the large request waits", who)
	case <-time.After(200 * time.Millisecond):
	}
	holder.Release(3)
	assert.Equal(t, "big", <-served)
	big.Release(5)
	wg.Wait()
	close(served)
	var rest []string
	for who := range served {
		rest = append(rest, who)
	}
	assert.ElementsMatch(t, []string{"small1", "small2"}, rest)
	small1.Release(1)
	small2.Release(1)
	assert.Empty(t, semHolders(t, rc, name))
}

func TestSemaphoreCrashedHolder(t *testing.T) {
	t.Parallel() // waits for leases to run out: see redistest.Parallel
	forEachTopology(t, testSemaphoreCrashedHolder)
}

func testSemaphoreCrashedHolder(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	crashSemaphore(t, tg, name)
}

// crashSemaphore has a child process hold all 3 permits of the semaphore
// name with a 1 s watchdog lease, kills it with SIGKILL, and checks that a
// waiter here gets them within the lease plus 500 ms.
func crashSemaphore(t *testing.T, tg *redisserver.Target, name string) {
	const lease = time.Second
	child := startQueuedChild(t, tg, "sem-hold", name, lease, 0, "held")
	c, rc := newClient(t, tg)
	s := c.NewSemaphore(name, 3)
	assert.False(t, s.TryAcquire(1))
	took := make(chan time.Time, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), hang)
		defer cancel()
		if err := s.Acquire(ctx, 3); err != nil {
			t.Error(err)
		}
		took <- time.Now()
	}()
	waitSemQueued(t, rc, name, 1)
	require.NoError(t, child.Process.Kill())
	killed := time.Now()
	d := (<-took).Sub(killed)
	t.Logf("%s: the crashed holder's permits were taken %v after SIGKILL", name, d)
	assert.LessOrEqual(t, d, lease+500*time.Millisecond)
	s.Release(3)
}

// Release wakes the waiters that fit, in other Clients, without waiting for
// a timer (the holder's lease is 30 s, the heartbeat 5 s).
func TestSemaphoreReleaseWakesWaiters(t *testing.T) {
	forEachTopology(t, testSemaphoreReleaseWakesWaiters)
}

func testSemaphoreReleaseWakesWaiters(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	c, rc := newClient(t, tg)
	holder := c.NewSemaphore(name, 5)
	require.NoError(t, holder.Acquire(context.Background(), 5))
	got := make(chan time.Time, 2)
	var handles []*redisync.Semaphore
	var wakeups atomic.Int64
	for i, n := range []int64{2, 3} {
		oc, _ := newClient(t, tg, countPubSubWakeups(&wakeups))
		s := oc.NewSemaphore(name, 5)
		handles = append(handles, s)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), hang)
			defer cancel()
			if err := s.Acquire(ctx, n); err != nil {
				t.Error(err)
			}
			got <- time.Now()
		}()
		waitSemQueued(t, rc, name, int64(i+1))
	}
	time.Sleep(50 * time.Millisecond) // subscribed
	before := wakeups.Load()
	released := time.Now()
	holder.Release(5)
	for range 2 {
		d := (<-got).Sub(released)
		t.Logf("waiter served %v after the release", d)
		assert.Less(t, d, 2*time.Second, "woken by the release, not by a timer")
	}
	assert.EqualValues(t, 2, wakeups.Load()-before, "one wake-up per waiter that fits")
	handles[0].Release(2)
	handles[1].Release(3)
}

func TestSemaphoreCancelLeavesNothing(t *testing.T) {
	forEachTopology(t, testSemaphoreCancelLeavesNothing)
}

func testSemaphoreCancelLeavesNothing(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	c, rc := newClient(t, tg)
	holder := c.NewSemaphore(name, 5)
	require.NoError(t, holder.Acquire(context.Background(), 4))
	// A live waiter stays queued throughout.
	oc, _ := newClient(t, tg)
	first := oc.NewSemaphore(name, 5)
	firstErr := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), hang)
		defer cancel()
		firstErr <- first.Acquire(ctx, 3)
	}()
	waitSemQueued(t, rc, name, 1)
	holders := semHolders(t, rc, name)

	w := oc.NewSemaphore(name, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	assert.Equal(t, context.DeadlineExceeded, w.Acquire(ctx, 1), "ctx.Err() comes back unwrapped")
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	assert.Equal(t, context.Canceled, w.Acquire(ctx, 2))
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	assert.Equal(t, context.DeadlineExceeded, w.Acquire(ctx, 6), "more than the size waits for ctx")
	assert.EqualValues(t, 1, semQueued(t, rc, name), "queue length after cancelled waiters")
	assert.Equal(t, holders, semHolders(t, rc, name), "permits after cancelled waiters")
	assert.Zero(t, w.Held())

	holder.Release(4)
	require.NoError(t, <-firstErr)
	first.Release(3)
}

func TestSemaphoreSizeMismatch(t *testing.T) { forEachTopology(t, testSemaphoreSizeMismatch) }

func testSemaphoreSizeMismatch(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	c, _ := newClient(t, tg)
	s := c.NewSemaphore(name, 5)
	require.NoError(t, s.Acquire(context.Background(), 1))
	other := c.NewSemaphore(name, 4)
	err := other.Acquire(context.Background(), 1)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "size")
	assert.False(t, other.TryAcquire(1))
	s.Release(1)
}

func TestSemaphoreMisuse(t *testing.T) { forEachTopology(t, testSemaphoreMisuse) }

func testSemaphoreMisuse(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	c, _ := newClient(t, tg)
	s := c.NewSemaphore(name, 2)
	assert.PanicsWithValue(t, fmt.Sprintf("redisync: semaphore %q released more than held", s.Name()), func() { s.Release(1) })
	require.True(t, s.TryAcquire(2))
	assert.False(t, s.TryAcquire(1))
	assert.PanicsWithValue(t, fmt.Sprintf("redisync: semaphore %q released more than held", s.Name()), func() { s.Release(3) })
	s.Release(1)
	s.Release(1)
	assert.PanicsWithValue(t, fmt.Sprintf("redisync: semaphore %q released more than held", s.Name()), func() { s.Release(1) })
	assert.NoError(t, s.Err())
	assert.Panics(t, func() { c.NewSemaphore("x", -1) })
	assert.Panics(t, func() { _ = s.Acquire(context.Background(), -1) })
}

func TestSemaphoreLossIsReported(t *testing.T) { forEachTopology(t, testSemaphoreLossIsReported) }

func testSemaphoreLossIsReported(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	c, rc := newClient(t, tg, redisync.WithWatchdogTimeout(900*time.Millisecond))
	s := c.NewSemaphore(name, 3)
	require.NoError(t, s.Acquire(context.Background(), 2))
	require.NoError(t, rc.Do(context.Background(), rc.B().Del().Key(layout.Aux(layout.SemLeasesPrefix, name)).Build()).Error())
	select {
	case <-s.Done():
	case <-time.After(hang):
		t.Fatal("loss not reported")
	}
	assert.ErrorIs(t, s.Err(), redisync.ErrLockLost)
	assert.NotPanics(t, func() { s.Release(2) }, "the lost permits may still be released")
	require.True(t, s.TryAcquire(3), "the handle is usable again")
	s.Release(3)
}

func TestClusterSemaphore(t *testing.T) {
	tg := clusterTarget(t)
	base := freshName(t)
	names := namesOnEveryMaster(t, tg, base, 1)
	for _, name := range names {
		overAdmit(t, tg, name, 2, 4, 10)
	}
	crashSemaphore(t, tg, namesOnEveryMaster(t, tg, base+"-crash", 1)[1])
}

// A Semaphore is administered like the locks: IsLocked and TTL read its live
// holders, and ForceUnlock takes every permit back, ends the holds of this
// Client as force-unlocked, wakes the queued requests that now fit and keeps
// the size.
func TestSemaphoreAdministration(t *testing.T) { forEachTopology(t, testSemaphoreAdministration) }

func testSemaphoreAdministration(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	ctx := context.Background()
	hc, rc := newClient(t, tg, redisync.WithWatchdogTimeout(3*time.Second))
	s := hc.NewSemaphore(name, 2)
	admin := hc.NewSemaphore(name, 2)
	locked, err := admin.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked, "no permit is held yet")

	require.NoError(t, s.Acquire(ctx, 2))
	locked, err = admin.IsLocked(ctx)
	require.NoError(t, err)
	assert.True(t, locked)
	ttl, err := admin.TTL(ctx)
	require.NoError(t, err)
	assert.Greater(t, ttl, time.Second)
	assert.LessOrEqual(t, ttl, 3*time.Second)

	wc, _ := newClient(t, tg)
	w := wc.NewSemaphore(name, 2)
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(ctx, hang)
		defer cancel()
		got <- w.Acquire(ctx, 1)
	}()
	waitSemQueued(t, rc, name, 1)

	ok, err := admin.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	select {
	case <-s.Done():
	case <-time.After(hang):
		t.Fatal("the holder in this Client was not told at once")
	}
	assert.ErrorIs(t, s.Err(), redisync.ErrLockLost)
	assert.ErrorIs(t, s.Err(), redisync.ErrForceUnlocked)
	require.NoError(t, <-got, "the queued request that fits is woken")
	assert.Len(t, semHolders(t, rc, name), 1, "only the woken waiter holds")
	size, err := rc.Do(ctx, rc.B().Get().Key(layout.Aux(layout.SemSizePrefix, name)).Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "2", size, "the size is kept")

	assert.NotPanics(t, func() { s.Release(2) }, "the lost permits are released as usual")
	assert.Zero(t, s.Held())
	w.Release(1)
	locked, err = admin.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked)
	ttl, err = admin.TTL(ctx)
	require.NoError(t, err)
	assert.Zero(t, ttl)
	ok, err = admin.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "nothing was held")
}

// A holder whose lease lapsed holds nothing: its permits are not counted, and
// a force unlock takes nothing from it.
func TestSemaphoreLapsedHolderIsNotCounted(t *testing.T) {
	name := freshName(t)
	ctx := context.Background()
	c, rc := newClient(t, standalone, redisync.WithWatchdogTimeout(3*time.Second))
	live := c.NewSemaphore(name, 2)
	short := c.NewSemaphore(name, 2, redisync.WithLease(100*time.Millisecond))
	require.NoError(t, short.Acquire(ctx, 1))
	require.NoError(t, live.Acquire(ctx, 1))
	<-short.Done()
	require.Len(t, semHolders(t, rc, name), 2, "the lapsed entry stays until a script runs")
	admin := c.NewSemaphore(name, 2)
	locked, err := admin.IsLocked(ctx)
	require.NoError(t, err)
	assert.True(t, locked)
	ttl, err := admin.TTL(ctx)
	require.NoError(t, err)
	assert.Greater(t, ttl, time.Second, "the live holder's lease, not the lapsed one's")

	ok, err := admin.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	<-live.Done()
	assert.ErrorIs(t, live.Err(), redisync.ErrForceUnlocked)
	assert.ErrorIs(t, short.Err(), redisync.ErrLeaseExpired, "the lapsed hold keeps its own cause")
	assert.NotErrorIs(t, short.Err(), redisync.ErrForceUnlocked)
	assert.Empty(t, semHolders(t, rc, name))
	live.Release(1)
	short.Release(1)
}

// A Semaphore acquire whose reply is read after the lease it set ran out is
// no hold: by then the permits came back in Redis and another holder took
// them. Acquire waits on, and gets the permit once the other releases it.
// (Acquire returned nil after the lease with another holder inside: an
// over-grant. The check that refuses such a reply covered the locks with a
// hold count only; the Semaphore's retry then finds its entry gone.)
func TestSemaphoreLateAcquireReplyIsNoHold(t *testing.T) {
	tg := standalone
	name := t.Name() + uniqueSuffix()
	c, lc := newLateClient(t, tg, redisync.WithWatchdogTimeout(time.Second))
	other, _ := newClient(t, tg)
	s, rival := c.NewSemaphore(name, 1), other.NewSemaphore(name, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	require.NoError(t, s.Acquire(ctx, 1)) // loads the scripts: the held-up reply is no NOSCRIPT
	s.Release(1)
	lc.DelayReply(scripts.SemAcquire, 1)
	got := make(chan error, 1)
	go func() { got <- s.Acquire(ctx, 1) }()
	require.Eventually(t, func() bool { return lc.Caught() == 1 }, 5*time.Second, 5*time.Millisecond)
	time.Sleep(1300 * time.Millisecond) // past the 1 s lease: the permit comes back in Redis
	require.NoError(t, rival.Acquire(ctx, 1), "the expired permit is free")
	late := lc.Deliver(t) // the late reply: acquired, 1.3 s ago
	v, err := late.ToArray()
	require.NoError(t, err)
	n, _ := v[0].AsInt64()
	require.EqualValues(t, 1, n, "the held-up attempt took the permit")
	select {
	case err := <-got:
		t.Fatalf("Acquire returned %v on a reply that came after its lease, with another holder inside", err)
	case <-time.After(500 * time.Millisecond):
	}
	assert.Zero(t, s.Held(), "no permit is counted for the handle")
	rival.Release(1)
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting call did not get the permit after the other released it")
	}
	assert.EqualValues(t, 1, s.Held())
	select {
	case <-s.Done():
		t.Fatalf("the new hold ended: %v", s.Err())
	default:
	}
	assert.False(t, rival.TryAcquire(1), "the permit is held")
	s.Release(1)
	assert.True(t, rival.TryAcquire(1), "released")
	rival.Release(1)
}

// Weights are counted exactly however large: a holder of 1.5e14 permits out
// of 2e14 leaves 5e13 free, before and after it gives one back, and its
// entry reads back as the permits it holds. (Lua prints such a number as
// "1.5e+14" when it joins it to a string, which reads back as 1 permit.)
func TestSemaphoreLargeWeights(t *testing.T) {
	name := freshName(t)
	ctx := context.Background()
	c, rc := newClient(t, standalone)
	const size, n = 2e14, 1.5e14
	a := c.NewSemaphore(name, size)
	b := c.NewSemaphore(name, size)
	entry := func() int64 {
		t.Helper()
		holders := semHolders(t, rc, name)
		require.Len(t, holders, 1)
		for _, e := range holders {
			permits, _, ok := layout.ParseSemEntry(e)
			assert.True(t, ok, "the entry %q reads back", e)
			return permits
		}
		return 0
	}
	require.NoError(t, a.Acquire(ctx, n))
	if !assert.False(t, b.TryAcquire(n), "a second 1.5e14 fits in a size of 2e14") {
		b.Release(n)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := b.Acquire(short, n); !assert.ErrorIs(t, err, context.DeadlineExceeded, "a second 1.5e14 fits in a size of 2e14") && err == nil {
		b.Release(n)
	}
	assert.EqualValues(t, int64(n), entry(), "the holder's entry")

	a.Release(1)
	assert.EqualValues(t, int64(n-1), entry(), "the entry after a partial release")
	if !assert.False(t, b.TryAcquire(size-n+2), "more than the free permits after a partial release") {
		b.Release(size - n + 2)
	}
	if assert.True(t, b.TryAcquire(size-n+1), "the free permits") {
		b.Release(size - n + 1)
	}
	a.Release(n - 1)
	assert.Empty(t, semHolders(t, rc, name))
}

// Sizes go up to MaxSemaphoreSize, and weights are counted exactly up to it:
// a holder of all but one permit leaves exactly one. A larger size is refused
// by each semaphore's constructor, and a larger request by a
// CountingSemaphore, whose count may be larger than any size (set by Java, or
// by releases): a request is compared with it as a Lua number.
func TestSemaphoreSizeLimit(t *testing.T) {
	ctx := context.Background()
	c, rc := newClient(t, standalone)
	const most = redisync.MaxSemaphoreSize
	if strconv.IntSize == 64 {
		assert.EqualValues(t, int64(1<<53-1), int64(most))
	}

	name := freshName(t)
	s := c.NewSemaphore(name, most)
	other := c.NewSemaphore(name, most)
	require.NoError(t, s.Acquire(ctx, most-1))
	if !assert.False(t, other.TryAcquire(2), "two more than the size less one") {
		other.Release(2)
	}
	if assert.True(t, other.TryAcquire(1), "the last permit") {
		other.Release(1)
	}
	s.Release(most - 1)

	name = "csem:" + freshName(t)
	require.NoError(t, rc.Do(ctx, rc.B().Set().Key(name).Value("1152921504606846976").Build()).Error(), "a count of 2^60")
	cs := c.NewCountingSemaphore(name, most)
	require.True(t, cs.TryAcquire(most))
	free, err := cs.Available(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, int64(1<<60-most), free, "2^60 less the largest request")
	cs.Release(most)

	assert.PanicsWithValue(t, "redisync: semaphore size > MaxSemaphoreSize", func() { c.NewSemaphore("x", most+1) })
	assert.PanicsWithValue(t, "redisync: counting semaphore size > MaxSemaphoreSize", func() { c.NewCountingSemaphore("x", most+1) })
	assert.PanicsWithValue(t, "redisync: expirable semaphore size > MaxSemaphoreSize", func() { c.NewExpirableSemaphore("x", most+1) })
	assert.PanicsWithValue(t, "redisync: counting semaphore: n > MaxSemaphoreSize", func() { _ = cs.Acquire(ctx, most+1) })
	assert.PanicsWithValue(t, "redisync: counting semaphore: n > MaxSemaphoreSize", func() { cs.TryAcquire(most + 1) })
	assert.PanicsWithValue(t, "redisync: counting semaphore: n < 0", func() { cs.TryAcquire(-1) })
}

// A Semaphore's late release must not change the count of a later state of
// the same handle: before, it set an old count, and the semaphore let more
// permits out than its size.
func TestSemaphoreLateReleaseKeepsCount(t *testing.T) {
	t.Parallel() // waits for leases to run out: see redistest.Parallel
	c, late := newLateClient(t, standalone)
	warmUp(t, c)
	rivals, _ := newClient(t, standalone)
	name := freshName(t)
	ctx := context.Background()
	t.Run("within a term", func(t *testing.T) {
		s := c.NewSemaphore(name+":term", 2)
		require.NoError(t, s.Acquire(ctx, 2))
		late.Hold(scripts.SemRelease, 1)
		s.Release(1) // gives up after its retry budget; the handle counts 1
		require.NoError(t, s.Acquire(ctx, 1))
		ran(t, late.Deliver(t)) // "keep 1" lands on the handle's 2
		assert.False(t, rivals.NewSemaphore(name+":term", 2).TryAcquire(1), "3 permits out of 2")
		s.Release(2)
	})
	t.Run("across terms", func(t *testing.T) {
		s := c.NewSemaphore(name+":terms", 2, redisync.WithLease(500*time.Millisecond))
		require.NoError(t, s.Acquire(ctx, 1))
		late.Hold(scripts.SemRelease, 1)
		s.Release(1) // gives up; the term ends here
		require.NoError(t, s.Acquire(ctx, 2))
		ran(t, late.Deliver(t)) // "keep 0" lands on the new term
		assert.False(t, rivals.NewSemaphore(name+":terms", 2).TryAcquire(2), "4 permits out of 2")
		assert.NoError(t, s.Err())
		s.Release(2)
	})
	t.Run("late acquire", func(t *testing.T) {
		s := c.NewSemaphore(name+":acquire", 2)
		late.Hold(scripts.SemAcquire, 1)
		require.ErrorIs(t, s.Acquire(short(t, 100*time.Millisecond), 1), context.DeadlineExceeded)
		ran(t, late.Deliver(t))
		rival := rivals.NewSemaphore(name+":acquire", 2)
		assert.True(t, rival.TryAcquire(2), "the late acquire took a permit after Acquire had given up")
		rival.Release(2)
	})
}

// A Semaphore's renewal checks the count it renews: a holder's entry
// rewritten by someone else is a loss.
func TestSemaphoreRenewalChecksCount(t *testing.T) {
	c, rc := newClient(t, standalone)
	name := freshName(t)
	s := c.NewSemaphore(name, 3, redisync.WithWatchdogTimeout(300*time.Millisecond))
	require.NoError(t, s.Acquire(context.Background(), 1))
	holders := layout.Aux(layout.SemHoldersPrefix, name)
	fields, err := rc.Do(context.Background(), rc.B().Hkeys().Key(holders).Build()).AsStrSlice()
	require.NoError(t, err)
	require.Len(t, fields, 1)
	require.NoError(t, rc.Do(context.Background(), rc.B().Hset().Key(holders).FieldValue().FieldValue(fields[0], "3").Build()).Error())
	select {
	case <-s.Done():
	case <-time.After(hang):
		t.Fatal("a rewritten count went unnoticed")
	}
	assert.ErrorIs(t, s.Err(), redisync.ErrLockLost)
	s.Release(1)
}
