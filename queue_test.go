package redisync_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redisserver"
	"github.com/go-redisync/redisync/internal/redistest"
	"github.com/go-redisync/redisync/internal/scripts"
)

// mutexQueue returns the fields queued for the Mutex name, first first.
func mutexQueue(t testing.TB, rc rueidis.Client, name string) []string {
	t.Helper()
	q, err := rc.Do(context.Background(), rc.B().Zrange().Key(layout.MutexOf(name).Queue).Min("0").Max("-1").Build()).AsStrSlice()
	require.NoError(t, err)
	return q
}

// waitMutexQueued waits until n waiting calls are queued for the Mutex name.
func waitMutexQueued(t testing.TB, rc rueidis.Client, name string, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return len(mutexQueue(t, rc, name)) == n }, hang, time.Millisecond,
		"the queue of %s never had %d waiters", name, n)
}

// A release in one process hands the lock to a waiter queued in Redis by
// another: the waiter's field holds the lock and the waiter takes it from
// the release's message, without a script call of its own.
func TestMutexHandedInRedis(t *testing.T) {
	requireReal(t, standalone, "INFO commandstats")
	name := freshName(t)
	hrec, wrec := &recorder{}, &recorder{}
	holder, rc := newClient(t, standalone, redisync.WithObserver(hrec))
	// Long timeouts: no heartbeat or renewal falls within the counted calls.
	waiter, _ := newClient(t, standalone, redisync.WithWatchdogTimeout(2*time.Minute), redisync.WithHeartbeatTimeout(time.Minute),
		redisync.WithObserver(wrec))
	ctx := context.Background()
	h, w := holder.NewMutex(name), waiter.NewMutex(name)
	h.Lock()
	got := make(chan error, 1)
	go func() { got <- w.LockContext(ctx) }()
	waitMutexQueued(t, rc, name, 1)
	queued := mutexQueue(t, rc, name)
	before := redistest.CommandCalls(t, rc, "evalsha")
	h.Unlock()
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(hang):
		t.Fatal("the queued waiter did not get the lock")
	}
	assert.EqualValues(t, 1, redistest.CommandCalls(t, rc, "evalsha")-before, "one script call: the release")
	assert.Equal(t, queued, fields(t, name), "the waiter holds with the field it queued under")
	assert.Empty(t, mutexQueue(t, rc, name))
	n, err := w.HoldCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	ttl, err := w.TTL(ctx)
	require.NoError(t, err)
	assert.LessOrEqual(t, ttl, time.Minute, "until the first renewal, the hold lasts to the heartbeat deadline")
	select {
	case <-w.Done():
		t.Fatal("the handed hold ended")
	default:
	}
	w.Unlock()
	assert.Empty(t, fields(t, name))
	assert.NoError(t, w.Err())
	if acq := wrec.of(name, redisync.EventAcquired); assert.Len(t, acq, 1) {
		assert.True(t, acq[0].Handed, "the observer hears that the hold came with the release's message")
	}
	if acq := hrec.of(name, redisync.EventAcquired); assert.Len(t, acq, 1) {
		assert.False(t, acq[0].Handed, "an acquire of its own is not handed")
	}
}

// A handed hold lasts only to the waiter's heartbeat deadline until its
// renewal: renewed in time, it is never reported lost and ends up with the
// full lease.
func TestMutexHandedHoldRenewed(t *testing.T) {
	name := freshName(t)
	holder, _ := newClient(t, standalone)
	waiter, _ := newClient(t, standalone, redisync.WithHeartbeatTimeout(300*time.Millisecond))
	ctx := context.Background()
	h, w := holder.NewMutex(name), waiter.NewMutex(name)
	h.Lock()
	rc := newRueidis(t, standalone)
	got := make(chan error, 1)
	go func() { got <- w.LockContext(ctx) }()
	waitMutexQueued(t, rc, name, 1)
	h.Unlock()
	require.NoError(t, <-got)
	time.Sleep(time.Second) // past the heartbeat deadline
	select {
	case <-w.Done():
		t.Fatalf("the handed hold was lost: %v", w.Err())
	default:
	}
	ttl, err := w.TTL(ctx)
	require.NoError(t, err)
	assert.Greater(t, ttl, 20*time.Second, "renewed to the watchdog lease")
	w.Unlock()
	assert.NoError(t, w.Err())
}

// A waiter that gives up just as the lock is handed to it passes it on: the
// next waiter gets it at once (never after a heartbeat timeout, which is
// how long a hold handed to nobody would block it), and nothing is left
// queued.
func TestMutexQueuedWaiterGivesUp(t *testing.T) {
	name := freshName(t)
	const heartbeat = 5 * time.Second
	holder, rc := newClient(t, standalone)
	c1, _ := newClient(t, standalone, redisync.WithHeartbeatTimeout(heartbeat))
	c2, _ := newClient(t, standalone, redisync.WithHeartbeatTimeout(heartbeat))
	h, w1, w2 := holder.NewMutex(name), c1.NewMutex(name), c2.NewMutex(name)
	var gaveUp int
	for i := range 30 {
		h.Lock()
		ctx, cancel := context.WithCancel(context.Background())
		first := make(chan error, 1)
		go func() { first <- w1.LockContext(ctx) }()
		waitMutexQueued(t, rc, name, 1)
		second := make(chan error, 1)
		go func() { second <- w2.LockContext(context.Background()) }()
		waitMutexQueued(t, rc, name, 2)
		go func() {
			time.Sleep(time.Duration(i) * 15 * time.Microsecond) // around the handover's message
			cancel()
		}()
		h.Unlock()
		if err := <-first; err == nil {
			w1.Unlock()
		} else {
			gaveUp++
		}
		select {
		case err := <-second:
			require.NoError(t, err)
		case <-time.After(heartbeat / 2):
			t.Fatalf("round %d: the second waiter was not served: the lock went to the one that gave up", i)
		}
		w2.Unlock()
		assert.Empty(t, mutexQueue(t, rc, name), "round %d: a place left behind", i)
		assert.Empty(t, fields(t, name), "round %d: a hold left behind", i)
	}
	t.Logf("the first waiter gave up in %d of 30 rounds", gaveUp)
}

// A hold handed to a waiter within its Client (no Redis) while that waiter
// is queued in Redis takes it out of the queue: the Client's next release
// does not hand the lock to the place it left. The leave runs in the
// background (LockContext returns before it lands: see
// TestMutexHandoverReturnsBeforeLeavingTheQueue), so the test waits for it;
// a release that overtakes the leave hands the lock to the place, which the
// leave then releases: the lock is free again once the leave lands.
func TestMutexLocalHandoverLeavesQueue(t *testing.T) {
	t.Cleanup(redisync.LongHandoversForTest())
	name := freshName(t)
	c, rc := newClient(t, standalone)
	giver, taker := c.NewMutex(name), c.NewMutex(name)
	for _, wait := range []bool{true, false} {
		require.NoError(t, giver.LockContext(context.Background()))
		got := make(chan error, 1)
		go func() { got <- taker.LockContext(context.Background()) }()
		waitMutexQueued(t, rc, name, 1)
		giver.Unlock() // hands the hold to the taker within the Client
		require.NoError(t, <-got)
		if wait {
			require.Eventually(t, func() bool { return len(mutexQueue(t, rc, name)) == 0 },
				5*time.Second, time.Millisecond, "the taker's place was not left")
			assert.Len(t, fields(t, name), 1)
			taker.Unlock()
			assert.Empty(t, fields(t, name), "the release handed the lock to the place the taker had left")
			continue
		}
		taker.Unlock() // may overtake the leave
		require.Eventually(t, func() bool {
			return len(fields(t, name)) == 0 && len(mutexQueue(t, rc, name)) == 0
		}, 5*time.Second, time.Millisecond, "the lock stayed with the place the taker had left")
	}
}

func TestMutexCrashedQueuedWaiter(t *testing.T) {
	t.Parallel() // waits for leases to run out: see redistest.Parallel
	forEachTopology(t, testMutexCrashedQueuedWaiter)
}

// A waiter that dies while queued is skipped once its heartbeat lapses; if
// the lock is handed to it before, the hold expires at its heartbeat
// deadline and the waiters behind it get the lock then, in at most twice the
// heartbeat timeout, one at a time.
func testMutexCrashedQueuedWaiter(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	const heartbeat = time.Second
	hc, rc := newClient(t, tg)
	h := hc.NewMutex(name)
	h.Lock()
	child := startQueuedChild(t, tg, "mutex-wait", name, 30*time.Second, heartbeat, "waiting")
	waitMutexQueued(t, rc, name, 1)
	var inside, worst int
	var mu sync.Mutex
	elapsed := make(chan time.Duration, 2)
	killed := make(chan time.Time, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		c, _ := newClient(t, tg, redisync.WithHeartbeatTimeout(heartbeat))
		w := c.NewMutex(name)
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), hang)
			defer cancel()
			if err := w.LockContext(ctx); err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			mu.Lock()
			inside++
			worst = max(worst, inside)
			mu.Unlock()
			elapsed <- time.Since(<-killed)
			time.Sleep(10 * time.Millisecond)
			mu.Lock()
			inside--
			mu.Unlock()
			w.Unlock()
		})
		waitMutexQueued(t, rc, name, i+2)
	}
	time.Sleep(heartbeat) // the child's heartbeat is renewed meanwhile
	require.Len(t, mutexQueue(t, rc, name), 3, "a live waiter stays queued")
	require.NoError(t, child.Process.Kill())
	at := time.Now()
	killed <- at
	killed <- at
	h.Unlock() // hands the lock to the dead waiter, whose heartbeat is still current
	wg.Wait()
	close(elapsed)
	for d := range elapsed {
		t.Logf("a live waiter took the lock %v after the queued child was killed", d)
		assert.LessOrEqual(t, d, 2*heartbeat+time.Second, "bound: the dead waiter's hold, then one wait of a heartbeat timeout")
	}
	assert.Equal(t, 1, worst, "two holders inside at once")
	assert.Empty(t, mutexQueue(t, rc, name))
}

// Redisson's waiters ignore the queue: a Go release hands the lock to a
// queued Go waiter with a message that is a number other than Redisson's
// (so a Java waiter, which reads each message as a Long, ignores it and
// finds the lock held), and publishes "0" when nobody is queued; a Java
// release wakes a queued Go waiter, which takes the lock and leaves the
// queue.
func TestMutexQueueAndRedisson(t *testing.T) {
	holder, rc := newClient(t, standalone)
	waiter, _ := newClient(t, standalone)
	name, java := freshName(t), "5e4d3c2b-java:1"
	h, w := holder.NewMutex(name), waiter.NewMutex(name)
	msgs := make(chan string, 8)
	ctx, cancel := context.WithCancel(context.Background())
	subscribed := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = rc.Receive(rueidis.WithOnSubscriptionHook(ctx, func(rueidis.PubSubSubscription) { close(subscribed) }),
			rc.B().Subscribe().Channel(layout.MutexOf(name).Channel).Build(), func(m rueidis.PubSubMessage) { msgs <- m.Message })
	}()
	t.Cleanup(func() { cancel(); <-done })
	<-subscribed
	message := func() string {
		select {
		case m := <-msgs:
			return m
		case <-time.After(hang):
			t.Fatal("no message")
			return ""
		}
	}

	h.Lock()
	in := inBackground(w.LockContext)
	waitMutexQueued(t, rc, name, 1)
	h.Unlock()
	require.NoError(t, <-in)
	m := message()
	n, err := strconv.ParseInt(m, 10, 64)
	require.NoError(t, err, "a Java waiter reads every message as a Long")
	assert.Greater(t, n, int64(1), "not one of Redisson's messages (0 and 1)")
	assert.Positive(t, javaLock(t, rc, name, java, 30000), "the handed lock excludes a Java caller")
	w.Unlock()
	assert.Equal(t, "0", message(), "nobody queued: Redisson's unlock message")
	require.EqualValues(t, -1, javaLock(t, rc, name, java, 30000))

	in = inBackground(w.LockContext)
	waitMutexQueued(t, rc, name, 1)
	javaUnlock(t, rc, name, java)
	require.NoError(t, <-in, "a Java release wakes a queued Go waiter")
	assert.Empty(t, mutexQueue(t, rc, name))
	w.Unlock()
}

// Of a Client's calls waiting for one lock, only the first queues in Redis;
// the others wait for it within the Client, and all are served.
func TestMutexOneQueuedPerClient(t *testing.T) {
	name := freshName(t)
	holder, rc := newClient(t, standalone)
	waiters, _ := newClient(t, standalone)
	h := holder.NewMutex(name)
	h.Lock()
	var wg sync.WaitGroup
	for range 5 {
		m := waiters.NewMutex(name)
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), hang)
			defer cancel()
			if err := m.LockContext(ctx); err != nil {
				t.Error(err)
				return
			}
			m.Unlock()
		})
	}
	require.Eventually(t, func() bool { return redisync.HandoverWaitersForTest(waiters, name) == 5 }, hang, time.Millisecond)
	waitMutexQueued(t, rc, name, 1)
	time.Sleep(100 * time.Millisecond)
	assert.Len(t, mutexQueue(t, rc, name), 1, "more than one call of the Client queued in Redis")
	h.Unlock()
	wg.Wait()
	assert.Empty(t, mutexQueue(t, rc, name))
	assert.Empty(t, fields(t, name))
}

// A Client that waited for a lock lately (its channel is still subscribed)
// queues a new waiting call in Redis with its first attempt: one script call
// to wait, and the handover takes none.
func TestMutexQueuesEarlyWhenContended(t *testing.T) {
	requireReal(t, standalone, "INFO commandstats")
	name := freshName(t)
	hrec, wrec := &recorder{}, &recorder{}
	holder, rc := newClient(t, standalone, redisync.WithObserver(hrec))
	// Long timeouts: no heartbeat or renewal falls within the counted calls.
	waiter, _ := newClient(t, standalone, redisync.WithWatchdogTimeout(2*time.Minute), redisync.WithHeartbeatTimeout(time.Minute),
		redisync.WithObserver(wrec))
	h, w := holder.NewMutex(name), waiter.NewMutex(name)
	for round := range 2 { // the first round subscribes the waiter's Client, the second finds it subscribed
		h.Lock()
		before := redistest.CommandCalls(t, rc, "evalsha")
		in := inBackground(w.LockContext)
		waitMutexQueued(t, rc, name, 1)
		waiting := redistest.CommandCalls(t, rc, "evalsha") - before
		h.Unlock()
		require.NoError(t, <-in)
		w.Unlock()
		if round == 0 {
			assert.EqualValues(t, 2, waiting, "a first wait: the lock found taken, then queued")
		} else {
			assert.EqualValues(t, 1, waiting, "a wait while the channel is subscribed queues at once")
		}
	}
}

// A call queued in Redis whose hold comes by a handover within its Client
// (from another handle of the Client) takes its place out of Redis' queue
// after it returns, not before: the chaos suite (F10, Redis Cluster) saw a
// call stay in LockContext while that cleanup waited on a stalled
// connection, the hold's renewals waiting on the same connection; the lease
// ran out, another process took the lock, and LockContext then returned
// nil: two holders. Here the cleanup and the renewals are held back: the
// handover must be returned before the lock can expire and go to the
// rival, and its loss reported when the lease runs out.
func TestMutexHandoverReturnsBeforeLeavingTheQueue(t *testing.T) {
	tg := standalone
	name := freshName(t)
	defer redisync.LongHandoversForTest()() // n's hold, from Redis a while ago, is handed within the Client
	// A heartbeat timeout within the lease: holds may be handed in Redis.
	c, lc := newLateClient(t, tg, redisync.WithWatchdogTimeout(time.Second), redisync.WithHeartbeatTimeout(time.Second/3))
	other, rc := newClient(t, tg)
	n, m, rival := c.NewMutex(name), c.NewMutex(name), other.NewMutex(name)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	require.NoError(t, n.LockContext(ctx))
	type result struct {
		at  time.Time
		err error
	}
	mGot, rivalGot := make(chan result, 1), make(chan result, 1)
	go func() {
		err := m.LockContext(ctx)
		mGot <- result{time.Now(), err}
	}()
	queue := layout.MutexOf(name).Queue
	require.Eventually(t, func() bool {
		n, err := rc.Do(ctx, rc.B().Zcard().Key(queue).Build()).AsInt64()
		return err == nil && n == 1
	}, 10*time.Second, 5*time.Millisecond, "m's call queues in Redis behind n's hold")
	lc.Hold(scripts.MutexRelease, 1) // the queue's leave
	lc.Hold(scripts.MutexRenew, 1000)
	require.NoError(t, n.UnlockContext(ctx)) // handed to m's call within the Client
	go func() {
		err := rival.LockContext(ctx)
		rivalGot <- result{time.Now(), err}
	}()
	var mRes, rivalRes result
	for range 2 {
		select {
		case mRes = <-mGot:
		case rivalRes = <-rivalGot:
		case <-ctx.Done():
			t.Fatal("a LockContext did not return")
		}
	}
	require.NoError(t, mRes.err)
	require.NoError(t, rivalRes.err, "the rival gets the lock once its lease ran out")
	assert.True(t, mRes.at.Before(rivalRes.at),
		"m's LockContext returned %v after the rival got the lock", mRes.at.Sub(rivalRes.at))
	select {
	case <-m.Done():
		require.ErrorIs(t, m.Err(), redisync.ErrLockLost)
	case <-ctx.Done():
		t.Fatal("the hold whose renewals were held back was not reported lost")
	}
	lc.DeliverAll()
	require.ErrorIs(t, m.UnlockContext(ctx), redisync.ErrLockLost)
	require.NoError(t, rival.UnlockContext(ctx))
}

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
