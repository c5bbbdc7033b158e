package redisync_test

import (
	"context"
	"fmt"
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
	"github.com/go-redisync/redisync/internal/redistest"
)

//lint:file-ignore SA2001 the hammers lock and unlock with nothing between on purpose, as Go's HammerMutex does.

// hang bounds waits that should end long before it; it only catches hangs.
const hang = 10 * time.Second

func TestMutexLockUnlock(t *testing.T) { forEachTopology(t, testMutexLockUnlock) }

func testMutexLockUnlock(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	c, rc := newClient(t, tg)
	ctx := context.Background()
	m := c.NewMutex(name)
	m.Lock()
	locked, err := m.IsLocked(ctx)
	require.NoError(t, err)
	assert.True(t, locked)
	n, err := m.HoldCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	ttl, err := m.TTL(ctx)
	require.NoError(t, err)
	assert.Greater(t, ttl, 25*time.Second, "watchdog lease is 30s by default")
	fields, err := rc.Do(ctx, rc.B().Hgetall().Key(name).Build()).AsStrMap()
	require.NoError(t, err)
	require.Len(t, fields, 1, "Redisson's layout: one field per owner")
	for field, count := range fields {
		assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}:[0-9]+$`, field)
		assert.Equal(t, "1", count)
	}
	assert.False(t, m.TryLock(), "a held handle does not re-enter")
	m.Unlock()
	select {
	case <-m.Done():
	default:
		t.Fatal("Done not closed after Unlock")
	}
	assert.NoError(t, m.Err())
	locked, err = m.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked)
	ttl, err = m.TTL(ctx)
	require.NoError(t, err)
	assert.Zero(t, ttl)
	assert.True(t, m.TryLock())
	m.Unlock()
}

// hammer runs clients x goroutines x rounds critical sections over names
// (goroutine g uses names[g%len(names)]) and fails if a name ever has two
// holders at once. Half the goroutines use Lock, half LockContext.
func hammer(t *testing.T, tg *redisserver.Target, names []string, clients, goroutines, rounds int) {
	inside := make([]atomic.Int32, len(names))
	var worst atomic.Int32
	var total atomic.Int64
	var wg sync.WaitGroup
	for ci := range clients {
		c, _ := newClient(t, tg)
		for g := range goroutines {
			k := g % len(names)
			m := c.NewMutex(names[k])
			wg.Go(func() {
				for r := range rounds {
					if (g+r)%2 == 0 {
						m.Lock()
					} else if err := m.LockContext(context.Background()); err != nil {
						t.Errorf("client %d goroutine %d: %v", ci, g, err)
						return
					}
					n := inside[k].Add(1)
					if n > worst.Load() {
						worst.Store(n)
					}
					total.Add(1)
					inside[k].Add(-1)
					m.Unlock()
				}
			})
		}
	}
	wg.Wait()
	assert.EqualValues(t, 1, worst.Load(), "most holders seen inside one critical section")
	assert.EqualValues(t, clients*goroutines*rounds, total.Load())
}

func TestMutexHammerOneName(t *testing.T) {
	t.Parallel() // waits for leases to run out: see redistest.Parallel
	forEachTopologyAtOnce(t, testMutexHammerOneName)
}

func testMutexHammerOneName(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	start := time.Now()
	rounds := scaled(tg, 200)
	hammer(t, tg, spread(t, tg, name), 4, 8, rounds)
	t.Logf("%d critical sections on one name in %v", 4*8*rounds, time.Since(start))
}

func TestMutexHammerDistinctNames(t *testing.T) {
	t.Parallel() // waits for leases to run out: see redistest.Parallel
	forEachTopologyAtOnce(t, testMutexHammerDistinctNames)
}

func testMutexHammerDistinctNames(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	names := make([]string, 8)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", name, i)
	}
	hammer(t, tg, names, 4, 8, scaled(tg, 200))
}

func TestMutexSecondLockOnHandleWaits(t *testing.T) {
	forEachTopology(t, testMutexSecondLockOnHandleWaits)
}

func testMutexSecondLockOnHandleWaits(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	c, _ := newClient(t, tg)
	m := c.NewMutex(name)
	m.Lock()
	acquired := make(chan struct{})
	go func() {
		m.Lock()
		close(acquired)
	}()
	select {
	case <-acquired:
		t.Fatal("a second Lock on a held handle did not wait")
	case <-time.After(300 * time.Millisecond):
	}
	m.Unlock()
	select {
	case <-acquired:
	case <-time.After(hang):
		t.Fatal("the waiting Lock was not served after Unlock")
	}
	m.Unlock() // sync semantics: any goroutine may unlock
}

func TestMutexReentrantOwner(t *testing.T) { forEachTopology(t, testMutexReentrantOwner) }

func testMutexReentrantOwner(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	c, _ := newClient(t, tg)
	m := c.NewMutex(name)
	owner := redisync.WithOwner(context.Background())
	for range 2 {
		require.NoError(t, m.LockContext(owner))
	}
	// The owner spans handles of the same name.
	require.NoError(t, c.NewMutex(name).LockContext(owner))

	other := redisync.WithOwner(context.Background())
	otherDone := make(chan error, 1)
	go func() { otherDone <- m.LockContext(other) }()
	for want := 3; want >= 1; want-- {
		n, err := m.HoldCount(owner)
		require.NoError(t, err)
		assert.Equal(t, want, n, "hold count")
		select {
		case err := <-otherDone:
			t.Fatalf("another owner acquired while the owner held %d: %v", want, err)
		case <-time.After(100 * time.Millisecond):
		}
		require.NoError(t, m.UnlockContext(owner))
	}
	select {
	case err := <-otherDone:
		require.NoError(t, err)
	case <-time.After(hang):
		t.Fatal("other owner not served after the last UnlockContext")
	}
	n, err := m.HoldCount(owner)
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.ErrorIs(t, m.UnlockContext(owner), redisync.ErrNotHeld)
	require.NoError(t, m.UnlockContext(other))
}

func TestMutexWatchdogRenews(t *testing.T) {
	t.Parallel() // waits for leases to run out: see redistest.Parallel
	forEachTopology(t, testMutexWatchdogRenews)
}

func testMutexWatchdogRenews(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	c, _ := newClient(t, tg, redisync.WithWatchdogTimeout(900*time.Millisecond))
	m := c.NewMutex(name)
	m.Lock()
	lowest := time.Hour
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		ttl, err := m.TTL(context.Background())
		require.NoError(t, err)
		lowest = min(lowest, ttl)
	}
	t.Logf("lowest PTTL over 3s with a 900ms watchdog: %v", lowest)
	// Renewed every 300 ms, the PTTL stays near 600 ms or above.
	assert.GreaterOrEqual(t, lowest, 300*time.Millisecond)
	assert.NoError(t, m.Err())
	m.Unlock()
}

func TestMutexFixedLeaseExpires(t *testing.T) { forEachTopology(t, testMutexFixedLeaseExpires) }

func testMutexFixedLeaseExpires(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	c, _ := newClient(t, tg)
	m := c.NewMutex(name, redisync.WithLease(500*time.Millisecond))
	m.Lock()
	ttl, err := m.TTL(context.Background())
	require.NoError(t, err)
	assert.LessOrEqual(t, ttl, 500*time.Millisecond)
	select {
	case <-m.Done():
	case <-time.After(hang):
		t.Fatal("expiry of the fixed lease not reported")
	}
	assert.ErrorIs(t, m.Err(), redisync.ErrLockLost)
	// The holder is told when the lease runs out by its own clock, which
	// starts before the server's: Redis lets the key go a moment later.
	assert.Eventually(t, func() bool {
		locked, err := m.IsLocked(context.Background())
		return err == nil && !locked
	}, hang, 5*time.Millisecond, "a fixed lease is not renewed")
	assert.NotPanics(t, m.Unlock, "Unlock of an expired hold")
	other, _ := newClient(t, tg)
	assert.True(t, other.NewMutex(name).TryLock())
}

func TestMutexLossIsReported(t *testing.T) { forEachTopology(t, testMutexLossIsReported) }

func testMutexLossIsReported(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	c, rc := newClient(t, tg, redisync.WithWatchdogTimeout(900*time.Millisecond))
	m := c.NewMutex(name)
	m.Lock()
	require.NoError(t, rc.Do(context.Background(), rc.B().Del().Key(name).Build()).Error())
	deleted := time.Now()
	select {
	case <-m.Done():
		// One renewal interval (300 ms), plus room for a loaded machine.
		assert.Less(t, time.Since(deleted), 300*time.Millisecond+500*time.Millisecond)
	case <-time.After(hang):
		t.Fatal("loss not reported")
	}
	assert.ErrorIs(t, m.Err(), redisync.ErrLockLost)
	assert.NotPanics(t, m.Unlock)
	assert.True(t, m.TryLock(), "the handle is usable again")
	m.Unlock()
}

func TestMutexCrashedHolderExpires(t *testing.T) {
	t.Parallel() // waits for leases to run out: see redistest.Parallel
	forEachTopology(t, testMutexCrashedHolderExpires)
}

func testMutexCrashedHolderExpires(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	crash(t, tg, spread(t, tg, name))
}

// crash has child processes take names with a 1 s watchdog lease, kills them
// with SIGKILL, and checks that waiters in this process take each name within
// the lease plus 500 ms.
func crash(t *testing.T, tg *redisserver.Target, names []string) {
	const lease = time.Second
	c, _ := newClient(t, tg)
	var children []func() error
	for _, name := range names {
		children = append(children, startChild(t, tg, name, lease).Process.Kill)
	}
	acquired := make(chan time.Duration, len(names))
	killed := make(chan time.Time)
	for _, name := range names {
		m := c.NewMutex(name)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), hang)
			defer cancel()
			if err := m.LockContext(ctx); err != nil {
				t.Errorf("%s: %v", name, err)
				acquired <- -1
				return
			}
			d := time.Since(<-killed)
			m.Unlock() // before the test can end: Unlock may log through t
			acquired <- d
		}()
	}
	time.Sleep(100 * time.Millisecond) // let the waiters start waiting
	for _, kill := range children {
		require.NoError(t, kill())
	}
	at := time.Now()
	for range names {
		killed <- at
	}
	for _, name := range names {
		d := <-acquired
		t.Logf("%s: taken %v after its holder was killed", name, d)
		assert.Positive(t, d)
		assert.LessOrEqual(t, d, lease+500*time.Millisecond)
	}
}

func TestMutexWakeupByPubSub(t *testing.T) { forEachTopology(t, testMutexWakeupByPubSub) }

func testMutexWakeupByPubSub(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	holder, _ := newClient(t, tg)
	waiter, _ := newClient(t, tg) // another Client: only Pub/Sub can wake it
	h := holder.NewMutex(name)
	h.Lock()
	got := make(chan time.Time, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), hang)
		defer cancel()
		w := waiter.NewMutex(name)
		if err := w.LockContext(ctx); err != nil {
			t.Error(err)
		}
		got <- time.Now()
		w.Unlock()
	}()
	time.Sleep(200 * time.Millisecond)
	released := time.Now()
	h.Unlock()
	handover := (<-got).Sub(released)
	t.Logf("handover to a waiter in another Client: %v", handover)
	// The holder's lease was 30 s: a waiter polling on its TTL would wait
	// that long. Well under it means the release message woke it.
	assert.Less(t, handover, 2*time.Second)
}

func TestMutexWakeupSurvivesFaults(t *testing.T) { forEachTopology(t, testMutexWakeupSurvivesFaults) }

func testMutexWakeupSurvivesFaults(t *testing.T, tg *redisserver.Target) {
	requireReal(t, tg, "CLIENT KILL")
	faults := map[string]func(t *testing.T, rc rueidis.Client){
		"CLIENT KILL TYPE pubsub": func(t *testing.T, _ rueidis.Client) {
			require.Positive(t, redistest.KillSubscribers(t, tg))
		},
		"script flush": func(t *testing.T, rc rueidis.Client) {
			require.NoError(t, rc.Do(context.Background(), rc.B().ScriptFlush().Build()).Error())
		},
	}
	for name, fault := range faults {
		t.Run(name, func(t *testing.T) {
			lock := freshName(t)
			holder, _ := newClient(t, tg)
			waiter, rc := newClient(t, tg)
			h := holder.NewMutex(lock)
			h.Lock()
			errs := make(chan error, 1)
			got := make(chan time.Time, 1)
			go func() {
				w := waiter.NewMutex(lock)
				err := w.LockContext(context.Background())
				got <- time.Now()
				errs <- err
				if err == nil {
					w.Unlock()
				}
			}()
			time.Sleep(200 * time.Millisecond)
			fault(t, rc)
			time.Sleep(200 * time.Millisecond)
			released := time.Now()
			h.Unlock()
			select {
			case err := <-errs:
				require.NoError(t, err)
			case <-time.After(hang):
				t.Fatal("waiter not served")
			}
			handover := (<-got).Sub(released)
			t.Logf("handover after %s: %v", name, handover)
			assert.Less(t, handover, 2*time.Second, "woken by Pub/Sub, not by the 30s lease")
		})
	}
}

func TestMutexCancelLeavesNothing(t *testing.T) {
	t.Parallel() // waits for leases to run out: see redistest.Parallel
	forEachTopology(t, testMutexCancelLeavesNothing)
}

func testMutexCancelLeavesNothing(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	holder, _ := newClient(t, tg)
	waiter, _ := newClient(t, tg)
	h := holder.NewMutex(name)
	h.Lock()
	defer h.Unlock()
	w := waiter.NewMutex(name)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := w.LockContext(ctx)
	assert.Equal(t, context.DeadlineExceeded, err, "ctx.Err() comes back unwrapped")

	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	assert.Equal(t, context.Canceled, w.LockContext(ctx))

	n, err := w.HoldCount(context.Background())
	require.NoError(t, err)
	assert.Zero(t, n, "no hold left by the cancelled waiter")
	channel := layout.Aux(layout.MutexChannelPrefix, name)
	assert.Eventually(t, func() bool { return subscribers(t, tg, channel) == 0 },
		hang, 10*time.Millisecond, "PUBSUB NUMSUB stays above 0 after the last waiter left")
	select {
	case <-w.Done():
	default:
		t.Error("Done of a handle that never held must be closed")
	}
}

func TestMutexMisuse(t *testing.T) { forEachTopology(t, testMutexMisuse) }

func testMutexMisuse(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	c, _ := newClient(t, tg)
	m := c.NewMutex(name)
	assert.PanicsWithValue(t, "redisync: unlock of unlocked mutex "+strconv.Quote(name), m.Unlock)
	assert.ErrorIs(t, m.UnlockContext(context.Background()), redisync.ErrNotHeld)

	m.Lock()
	other, _ := newClient(t, tg)
	intruder := other.NewMutex(name)
	assert.ErrorIs(t, intruder.UnlockContext(context.Background()), redisync.ErrNotHeld)
	assert.PanicsWithValue(t, "redisync: unlock of unlocked mutex "+strconv.Quote(name), intruder.Unlock)
	assert.ErrorIs(t, m.UnlockContext(redisync.WithOwner(context.Background())), redisync.ErrNotHeld)
	n, err := m.HoldCount(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, n, "another owner's unlock must leave the lock intact")
	m.Unlock()
	assert.PanicsWithValue(t, "redisync: unlock of unlocked mutex "+strconv.Quote(name), m.Unlock, "double unlock")

	assert.Panics(t, func() { c.NewMutex("") })
	assert.Panics(t, func() { c.NewMutex("a{}b") })
	assert.Panics(t, func() { c.NewMutex("x", redisync.WithLease(0)) })
	_, err = redisync.New(nil)
	assert.Error(t, err)
}

func TestMutexForceUnlock(t *testing.T) { forEachTopology(t, testMutexForceUnlock) }

func testMutexForceUnlock(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	holder, _ := newClient(t, tg, redisync.WithWatchdogTimeout(900*time.Millisecond))
	admin, _ := newClient(t, tg)
	h := holder.NewMutex(name)
	h.Lock()
	ok, err := admin.NewMutex(name).ForceUnlock(context.Background())
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = admin.NewMutex(name).ForceUnlock(context.Background())
	require.NoError(t, err)
	assert.False(t, ok, "nothing left to force")
	select {
	case <-h.Done():
	case <-time.After(hang):
		t.Fatal("holder not told of the force unlock")
	}
	assert.ErrorIs(t, h.Err(), redisync.ErrLockLost)
	h.Unlock()
}

// A fixed lease that runs out is a loss whose cause is the lease.
func TestLossCauseLeaseExpired(t *testing.T) {
	name := freshName(t)
	c, _ := newClient(t, standalone)
	m := c.NewMutex(name, redisync.WithLease(100*time.Millisecond))
	m.Lock()
	select {
	case <-m.Done():
	case <-time.After(hang):
		t.Fatal("the fixed lease's end was not reported")
	}
	assert.ErrorIs(t, m.Err(), redisync.ErrLockLost)
	assert.ErrorIs(t, m.Err(), redisync.ErrLeaseExpired)
	assert.NotErrorIs(t, m.Err(), redisync.ErrHoldGone)
	m.Unlock()
}

// A Locker with TryLock, as every exclusive lock handle is.
type tryLocker interface {
	sync.Locker
	TryLock() bool
}

// hammerTry is Go's HammerMutex: loops of Lock and Unlock, a third of them
// a TryLock instead.
func hammerTry(m tryLocker, loops int) {
	for i := range loops {
		if i%3 == 0 {
			if m.TryLock() {
				m.Unlock()
			}
			continue
		}
		m.Lock()
		m.Unlock()
	}
}

// The smallest shape of a deadlock the engine once had for good: two
// goroutines share a handle on one Client, a third locks through another
// Client, and a third of the loops are TryLocks. A call woken by something
// other than a handover left its place in the handle's handover queue
// behind, a later Unlock handed the hold to that place, which nobody read,
// and every process was locked out while the holder lived (1 run in 20-40).
// Every round must finish: a hold goes only to a call waiting for it.
func TestSharedHandleTryLockNoDeadlock(t *testing.T) {
	a, _ := newClient(t, standalone)
	b, _ := newClient(t, standalone)
	rounds := 60
	if !standalone.Real() {
		rounds = 15 // a round takes about a second on miniredis, 100 ms on a server
	}
	base := freshName(t)
	for round := range rounds {
		name := base + ":" + strconv.Itoa(round)
		shared, other := a.NewMutex(name), b.NewMutex(name)
		var wg sync.WaitGroup
		for _, m := range []tryLocker{shared, shared, other} {
			wg.Go(func() { hammerTry(m, 30) })
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(hang):
			held, _ := shared.IsLocked(context.Background())
			t.Fatalf("round %d: the goroutines are blocked in Lock for good (locked in Redis: %v)", round, held)
		}
	}
}
