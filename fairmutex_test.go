package redisync_test

import (
	"context"
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

// queueLen returns the lengths of the queue and heartbeat sets of the fair
// mutex name.
func queueLen(t testing.TB, rc rueidis.Client, name string) (queue, alive int64) {
	t.Helper()
	ctx := context.Background()
	queue, err := rc.Do(ctx, rc.B().Zcard().Key(layout.Aux(layout.FairQueuePrefix, name)).Build()).AsInt64()
	require.NoError(t, err)
	alive, err = rc.Do(ctx, rc.B().Zcard().Key(layout.Aux(layout.FairAlivePrefix, name)).Build()).AsInt64()
	require.NoError(t, err)
	return queue, alive
}

// waitQueued waits until the queue of the fair mutex name has n waiters.
func waitQueued(t testing.TB, rc rueidis.Client, name string, n int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		q, _ := queueLen(t, rc, name)
		return q == n
	}, hang, time.Millisecond, "queue of %s never reached %d", name, n)
}

func TestFairMutexLockUnlock(t *testing.T) { forEachTopology(t, testFairMutexLockUnlock) }

func testFairMutexLockUnlock(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	c, rc := newClient(t, tg)
	ctx := context.Background()
	fm := c.NewFairMutex(name)
	assert.Equal(t, name, fm.Name())
	fm.Lock()
	locked, err := fm.IsLocked(ctx)
	require.NoError(t, err)
	assert.True(t, locked)
	n, err := fm.HoldCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	ttl, err := fm.TTL(ctx)
	require.NoError(t, err)
	assert.Greater(t, ttl, 25*time.Second, "watchdog lease is 30s by default")
	fields, err := rc.Do(ctx, rc.B().Hgetall().Key("redisync_fair:{"+name+"}").Build()).AsStrMap()
	require.NoError(t, err)
	assert.Len(t, fields, 1, "one field per owner in redisync_fair:{name}")
	assert.False(t, fm.TryLock(), "a held handle does not re-enter")
	fm.Unlock()
	select {
	case <-fm.Done():
	default:
		t.Fatal("Done not closed after Unlock")
	}
	assert.NoError(t, fm.Err())
	ttl, err = fm.TTL(ctx)
	require.NoError(t, err)
	assert.Zero(t, ttl)
	assert.True(t, fm.TryLock())
	fm.Unlock()
	q, a := queueLen(t, rc, name)
	assert.Zero(t, q+a, "uncontended locking leaves no queue")
}

// fifo runs rounds in which a holder holds the fair mutex name while waiters
// from three Clients (perClient each) queue one after another, in an order
// that changes every round, and then checks that they were served in that
// order.
func fifo(t *testing.T, tg *redisserver.Target, name string, rounds, perClient int) {
	rc := newRueidis(t, tg)
	var handles []*redisync.FairMutex
	var holder *redisync.FairMutex
	for i := range 3 {
		c, _ := newClient(t, tg)
		if i == 0 {
			holder = c.NewFairMutex(name)
		}
		for range perClient {
			handles = append(handles, c.NewFairMutex(name))
		}
	}
	inversions := 0
	for r := range rounds {
		holder.Lock()
		order := make([]int, len(handles))
		for k := range order {
			order[k] = (k*(r%2*2-1) + r + len(handles)*rounds) % len(handles) // rotated, reversed on even rounds
		}
		var mu sync.Mutex
		var served []int
		var wg sync.WaitGroup
		for k, idx := range order {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), hang)
				defer cancel()
				if err := handles[idx].LockContext(ctx); err != nil {
					t.Errorf("round %d waiter %d: %v", r, idx, err)
					return
				}
				mu.Lock()
				served = append(served, idx)
				mu.Unlock()
				handles[idx].Unlock()
			})
			waitQueued(t, rc, name, int64(k+1))
		}
		holder.Unlock()
		wg.Wait()
		for k := range served {
			if served[k] != order[k] {
				inversions++
				t.Logf("round %d: queued %v, served %v", r, order, served)
				break
			}
		}
	}
	assert.Zero(t, inversions, "rounds served out of queue order")
}

func TestFairMutexFIFO(t *testing.T) {
	t.Parallel() // waits for leases to run out: see redistest.Parallel
	forEachTopologyAtOnce(t, testFairMutexFIFO)
}

func testFairMutexFIFO(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	start := time.Now()
	rounds := scaled(tg, 200)
	fifo(t, tg, name, rounds, 2)
	t.Logf("%d rounds of 6 queued waiters from 3 Clients in %v", rounds, time.Since(start))
}

// A waiter in a child process dies while queued; the waiters behind it move
// up once its heartbeat lapses.
func TestFairMutexCrashedWaiter(t *testing.T) {
	t.Parallel() // waits for leases to run out: see redistest.Parallel
	forEachTopology(t, testFairMutexCrashedWaiter)
}

func testFairMutexCrashedWaiter(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	const heartbeat = time.Second
	hc, rc := newClient(t, tg)
	h := hc.NewFairMutex(name)
	h.Lock()
	child := startQueuedChild(t, tg, "fair-wait", name, 30*time.Second, heartbeat, "waiting")
	waitQueued(t, rc, name, 1)
	acquired := make(chan int, 2)
	killed := make(chan time.Time, 2)
	var elapsed [2]time.Duration
	var wg sync.WaitGroup
	for i := range 2 {
		c, _ := newClient(t, tg, redisync.WithHeartbeatTimeout(heartbeat))
		w := c.NewFairMutex(name)
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), hang)
			defer cancel()
			if err := w.LockContext(ctx); err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			at := <-killed
			elapsed[i] = time.Since(at)
			acquired <- i
			w.Unlock()
		})
		waitQueued(t, rc, name, int64(i+2))
	}
	time.Sleep(heartbeat) // the child's heartbeat is renewed meanwhile
	q, _ := queueLen(t, rc, name)
	require.EqualValues(t, 3, q, "a live waiter stays queued")
	require.NoError(t, child.Process.Kill())
	at := time.Now()
	killed <- at
	killed <- at
	h.Unlock() // wakes the dead head: nobody takes the lock until it is reaped
	wg.Wait()
	close(acquired)
	var order []int
	for i := range acquired {
		order = append(order, i)
	}
	assert.Equal(t, []int{0, 1}, order, "the waiters behind the dead one keep their order")
	for i, d := range elapsed {
		t.Logf("waiter %d: took the lock %v after the queued child was killed", i, d)
		assert.LessOrEqual(t, d, heartbeat+500*time.Millisecond)
	}
}

// Live waiters queued behind a slow holder for three heartbeat timeouts keep
// their places: liveness is a heartbeat, not a predicted deadline.
func TestFairMutexLongWaitKeepsPlace(t *testing.T) {
	t.Parallel() // waits for leases to run out: see redistest.Parallel
	forEachTopology(t, testFairMutexLongWaitKeepsPlace)
}

func testFairMutexLongWaitKeepsPlace(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	const heartbeat = 300 * time.Millisecond
	hc, rc := newClient(t, tg)
	h := hc.NewFairMutex(name)
	h.Lock()
	served := make(chan int, 3)
	var wg sync.WaitGroup
	start := func(i int) {
		c, _ := newClient(t, tg, redisync.WithHeartbeatTimeout(heartbeat))
		w := c.NewFairMutex(name)
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), hang)
			defer cancel()
			if err := w.LockContext(ctx); err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			served <- i
			w.Unlock()
		})
	}
	start(0)
	waitQueued(t, rc, name, 1)
	start(1)
	waitQueued(t, rc, name, 2)
	time.Sleep(3*heartbeat + 100*time.Millisecond)
	start(2) // arrives after the first two have waited 3 heartbeat timeouts
	waitQueued(t, rc, name, 3)
	time.Sleep(heartbeat)
	q, a := queueLen(t, rc, name)
	assert.EqualValues(t, 3, q)
	assert.EqualValues(t, 3, a)
	h.Unlock()
	wg.Wait()
	close(served)
	var order []int
	for i := range served {
		order = append(order, i)
	}
	assert.Equal(t, []int{0, 1, 2}, order)
}

func TestFairMutexCancelLeavesQueue(t *testing.T) { forEachTopology(t, testFairMutexCancelLeavesQueue) }

func testFairMutexCancelLeavesQueue(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	hc, rc := newClient(t, tg)
	h := hc.NewFairMutex(name)
	h.Lock()
	// A live waiter stays queued throughout.
	c1, _ := newClient(t, tg)
	first := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), hang)
		defer cancel()
		w := c1.NewFairMutex(name)
		err := w.LockContext(ctx)
		if err == nil {
			w.Unlock()
		}
		first <- err
	}()
	waitQueued(t, rc, name, 1)

	c2, _ := newClient(t, tg)
	w := c2.NewFairMutex(name)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	assert.Equal(t, context.DeadlineExceeded, w.LockContext(ctx), "ctx.Err() comes back unwrapped")
	q, a := queueLen(t, rc, name)
	assert.EqualValues(t, 1, q, "queue length after a timed-out waiter")
	assert.EqualValues(t, 1, a, "heartbeats after a timed-out waiter")

	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	assert.Equal(t, context.Canceled, w.LockContext(ctx))
	q, a = queueLen(t, rc, name)
	assert.EqualValues(t, 1, q, "queue length after a cancelled waiter")
	assert.EqualValues(t, 1, a, "heartbeats after a cancelled waiter")

	h.Unlock()
	require.NoError(t, <-first)
	q, a = queueLen(t, rc, name)
	assert.Zero(t, q+a)
}

// A head that gives up while the lock is free passes its turn on. The head
// here is a slow process's entry, written directly, which gives up by running
// the same leave script a LockContext runs when its context ends.
func TestFairMutexCancelledHeadPassesTurn(t *testing.T) {
	forEachTopology(t, testFairMutexCancelledHeadPassesTurn)
}

func testFairMutexCancelledHeadPassesTurn(t *testing.T, tg *redisserver.Target) {
	c, rc := newClient(t, tg)
	ctx := context.Background()
	name := freshName(t)
	queue, alive := layout.Aux(layout.FairQueuePrefix, name), layout.Aux(layout.FairAlivePrefix, name)
	require.NoError(t, rc.Do(ctx, rc.B().Zadd().Key(queue).ScoreMember().ScoreMember(1, "slow").Build()).Error())
	require.NoError(t, rc.Do(ctx, rc.B().Arbitrary("ZADD").Keys(alive).Args("999999999999999", "slow").Build()).Error())
	next := c.NewFairMutex(name)
	got := make(chan time.Time, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), hang)
		defer cancel()
		if err := next.LockContext(ctx); err != nil {
			t.Error(err)
		}
		got <- time.Now()
	}()
	waitQueued(t, rc, name, 2)
	time.Sleep(50 * time.Millisecond) // subscribed
	leave := time.Now()
	reply, err := scripts.NewRunner(rc, rc.Mode() == rueidis.ClientModeCluster).Exec(ctx, scripts.Call{
		Script: scripts.FairRelease,
		Keys: []string{layout.Aux(layout.FairLockPrefix, name), queue, alive,
			layout.Aux(layout.FairChannelPrefix, name), layout.Aux(layout.FairLatchPrefix, name)},
		Args: []string{"nobody:1", "1", "0", publishCommand(tg), "5000", "0", "slow"},
	}).ToArray()
	require.NoError(t, err)
	head, _ := reply[1].ToString()
	require.NotEmpty(t, head, "the leaving head named no successor")
	select {
	case at := <-got:
		t.Logf("next waiter served %v after the head left", at.Sub(leave))
	case <-time.After(hang):
		t.Fatal("next waiter not served: the turn was not passed on")
	}
	next.Unlock()
}

// One release wakes one waiter: the one whose turn it is.
func TestFairMutexWakesOnlyHead(t *testing.T) { forEachTopology(t, testFairMutexWakesOnlyHead) }

func testFairMutexWakesOnlyHead(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	const waiters = 10
	hc, rc := newClient(t, tg)
	h := hc.NewFairMutex(name)
	h.Lock()
	acquired := make(chan int)
	release := make([]chan struct{}, waiters)
	var wakeups atomic.Int64
	var wg sync.WaitGroup
	for i := range waiters {
		release[i] = make(chan struct{})
		c, _ := newClient(t, tg, countPubSubWakeups(&wakeups))
		w := c.NewFairMutex(name)
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), hang)
			defer cancel()
			if err := w.LockContext(ctx); err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			acquired <- i
			<-release[i]
			w.Unlock()
		})
		waitQueued(t, rc, name, int64(i+1))
	}
	time.Sleep(50 * time.Millisecond) // subscriptions confirmed, second tries done
	before := wakeups.Load()
	h.Unlock()
	for i := range waiters {
		got := <-acquired
		assert.Equal(t, i, got, "served in order")
		time.Sleep(50 * time.Millisecond) // room for stray wake-ups to land
		assert.EqualValues(t, i+1, wakeups.Load()-before, "wake-ups after %d releases", i+1)
		close(release[got])
	}
	wg.Wait()
}

func TestFairMutexCrashedHolder(t *testing.T) {
	t.Parallel() // waits for leases to run out: see redistest.Parallel
	forEachTopology(t, testFairMutexCrashedHolder)
}

func testFairMutexCrashedHolder(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	crashFair(t, tg, name)
}

// crashFair has a child process hold the fair mutex name with a 1 s watchdog
// lease, kills it with SIGKILL and checks that the queued head takes the lock
// within the lease plus 500 ms.
func crashFair(t *testing.T, tg *redisserver.Target, name string) {
	const lease = time.Second
	child := startQueuedChild(t, tg, "fair-hold", name, lease, 0, "held")
	c, rc := newClient(t, tg)
	w := c.NewFairMutex(name)
	took := make(chan time.Time, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), hang)
		defer cancel()
		if err := w.LockContext(ctx); err != nil {
			t.Error(err)
		}
		took <- time.Now()
	}()
	waitQueued(t, rc, name, 1)
	require.NoError(t, child.Process.Kill())
	killed := time.Now()
	d := (<-took).Sub(killed)
	t.Logf("%s: head took the lock %v after its holder was killed", name, d)
	assert.LessOrEqual(t, d, lease+500*time.Millisecond)
	w.Unlock()
}

// TryLock does not take a free lock while a live waiter is queued.
func TestFairMutexTryLockDoesNotBarge(t *testing.T) {
	forEachTopology(t, testFairMutexTryLockDoesNotBarge)
}

func testFairMutexTryLockDoesNotBarge(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	c, rc := newClient(t, tg)
	ctx := context.Background()
	fm := c.NewFairMutex(name)
	// A queued waiter that has not taken its turn yet (a slow process).
	queue, alive := layout.Aux(layout.FairQueuePrefix, name), layout.Aux(layout.FairAlivePrefix, name)
	require.NoError(t, rc.Do(ctx, rc.B().Zadd().Key(queue).ScoreMember().ScoreMember(1, "slow").Build()).Error())
	require.NoError(t, rc.Do(ctx, rc.B().Arbitrary("ZADD").Keys(alive).Args("999999999999999", "slow").Build()).Error())
	assert.False(t, fm.TryLock(), "TryLock barged past a queued waiter")
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	assert.Equal(t, context.DeadlineExceeded, fm.LockContext(short), "LockContext must queue behind it")
	q, _ := queueLen(t, rc, name)
	assert.EqualValues(t, 1, q)
	require.NoError(t, rc.Do(ctx, rc.B().Del().Key(queue, alive).Build()).Error())
	assert.True(t, fm.TryLock())
	fm.Unlock()
}

func TestFairMutexReentrantOwner(t *testing.T) { forEachTopology(t, testFairMutexReentrantOwner) }

func testFairMutexReentrantOwner(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	c, rc := newClient(t, tg)
	fm := c.NewFairMutex(name)
	owner := redisync.WithOwner(context.Background())
	require.NoError(t, fm.LockContext(owner))
	other, _ := newClient(t, tg)
	done := make(chan error, 1)
	go func() { done <- other.NewFairMutex(name).LockContext(context.Background()) }()
	waitQueued(t, rc, name, 1)
	// Re-entry does not queue behind the waiter.
	require.NoError(t, c.NewFairMutex(name).LockContext(owner))
	n, err := fm.HoldCount(owner)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	ok, err := fm.TryLockContext(owner)
	require.NoError(t, err)
	assert.True(t, ok, "TryLock re-enters for the owner")
	for range 3 {
		select {
		case err := <-done:
			t.Fatalf("the waiter acquired while the owner held: %v", err)
		default:
		}
		require.NoError(t, fm.UnlockContext(owner))
	}
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(hang):
		t.Fatal("waiter not served after the owner's last unlock")
	}
	assert.ErrorIs(t, fm.UnlockContext(owner), redisync.ErrNotHeld)
}

// A second Lock on a held handle queues (its turn counts from the call) and
// waits for the handle's Unlock, like sync.Mutex.
func TestFairMutexSecondLockOnHandleQueues(t *testing.T) {
	forEachTopology(t, testFairMutexSecondLockOnHandleQueues)
}

func testFairMutexSecondLockOnHandleQueues(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	c, rc := newClient(t, tg)
	fm := c.NewFairMutex(name)
	fm.Lock()
	second := make(chan struct{})
	go func() {
		fm.Lock()
		close(second)
	}()
	waitQueued(t, rc, name, 1)
	other, _ := newClient(t, tg)
	third := make(chan struct{})
	o := other.NewFairMutex(name)
	go func() {
		o.Lock()
		close(third)
	}()
	waitQueued(t, rc, name, 2)
	fm.Unlock()
	select {
	case <-second:
	case <-third:
		t.Fatal("a later waiter was served before the handle's second Lock")
	case <-time.After(hang):
		t.Fatal("second Lock not served")
	}
	fm.Unlock()
	select {
	case <-third:
	case <-time.After(hang):
		t.Fatal("third waiter not served")
	}
	o.Unlock()
}

func TestFairMutexMisuse(t *testing.T) { forEachTopology(t, testFairMutexMisuse) }

func testFairMutexMisuse(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	c, _ := newClient(t, tg)
	fm := c.NewFairMutex(name)
	assert.PanicsWithValue(t, "redisync: unlock of unlocked mutex "+strconv.Quote(name), fm.Unlock)
	assert.ErrorIs(t, fm.UnlockContext(context.Background()), redisync.ErrNotHeld)
	fm.Lock()
	assert.ErrorIs(t, c.NewFairMutex(name).UnlockContext(context.Background()), redisync.ErrNotHeld)
	fm.Unlock()
	assert.PanicsWithValue(t, "redisync: unlock of unlocked mutex "+strconv.Quote(name), fm.Unlock, "double unlock")
	assert.Panics(t, func() { c.NewFairMutex("") })
	assert.Panics(t, func() { c.NewFairMutex("a{}b") })
	assert.Panics(t, func() { c.NewFairMutex("x", redisync.WithHeartbeatTimeout(time.Millisecond)) })
}

func TestFairMutexForceUnlockWakesHead(t *testing.T) {
	forEachTopology(t, testFairMutexForceUnlockWakesHead)
}

func testFairMutexForceUnlockWakesHead(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	hc, rc := newClient(t, tg, redisync.WithWatchdogTimeout(900*time.Millisecond))
	h := hc.NewFairMutex(name)
	h.Lock()
	wc, _ := newClient(t, tg)
	w := wc.NewFairMutex(name)
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), hang)
		defer cancel()
		got <- w.LockContext(ctx)
	}()
	waitQueued(t, rc, name, 1)
	admin, _ := newClient(t, tg)
	ok, err := admin.NewFairMutex(name).ForceUnlock(context.Background())
	require.NoError(t, err)
	assert.True(t, ok)
	require.NoError(t, <-got)
	select {
	case <-h.Done():
	case <-time.After(hang):
		t.Fatal("holder not told of the force unlock")
	}
	assert.ErrorIs(t, h.Err(), redisync.ErrLockLost)
	assert.NotPanics(t, h.Unlock)
	w.Unlock()
}

func TestFairMutexLossIsReported(t *testing.T) { forEachTopology(t, testFairMutexLossIsReported) }

func testFairMutexLossIsReported(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	c, rc := newClient(t, tg, redisync.WithWatchdogTimeout(900*time.Millisecond))
	fm := c.NewFairMutex(name)
	fm.Lock()
	require.NoError(t, rc.Do(context.Background(), rc.B().Del().Key("redisync_fair:{"+name+"}").Build()).Error())
	select {
	case <-fm.Done():
	case <-time.After(hang):
		t.Fatal("loss not reported")
	}
	assert.ErrorIs(t, fm.Err(), redisync.ErrLockLost)
	assert.NotPanics(t, fm.Unlock)
	assert.True(t, fm.TryLock(), "the handle is usable again")
	fm.Unlock()
}

// countPubSubWakeups is an observer option counting in n the waits that a
// wake-up message ended (not a timer, not a local release).
func countPubSubWakeups(n *atomic.Int64) redisync.Option {
	return redisync.WithObserver(redisync.ObserverFunc(func(_ context.Context, e redisync.Event) {
		if e.Kind == redisync.EventWakeup && e.Source == redisync.WakePubSub {
			n.Add(1)
		}
	}))
}
