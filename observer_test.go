package redisync_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redistest"
	"github.com/go-redisync/redisync/internal/scripts"
)

// recorder is an Observer that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []redisync.Event
}

func (r *recorder) Observe(_ context.Context, e redisync.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// of returns the events of kind (all kinds when 0) about name.
func (r *recorder) of(name string, kind redisync.EventKind) []redisync.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []redisync.Event
	for _, e := range r.events {
		if e.Name == name && (kind == 0 || e.Kind == kind) {
			out = append(out, e)
		}
	}
	return out
}

// kinds returns the kinds of the events about name, in order.
func (r *recorder) kinds(name string) []redisync.EventKind {
	var out []redisync.EventKind
	for _, e := range r.of(name, 0) {
		out = append(out, e.Kind)
	}
	return out
}

// waitFor waits until an event of kind about name has been observed.
func (r *recorder) waitFor(t *testing.T, name string, kind redisync.EventKind) redisync.Event {
	t.Helper()
	require.Eventually(t, func() bool { return len(r.of(name, kind)) > 0 }, hang, 5*time.Millisecond,
		"no %v event for %q", kind, name)
	return r.of(name, kind)[0]
}

// A lockCycle takes and releases one primitive through a waiting call and
// through a single attempt.
type lockCycle struct {
	primitive redisync.Primitive
	lock      func(c *redisync.Client, name string, opts ...redisync.Option) (unlock func())
	try       func(c *redisync.Client, name string, opts ...redisync.Option) (ok bool, unlock func())
}

var lockCycles = []lockCycle{
	{
		primitive: redisync.PrimitiveMutex,
		lock: func(c *redisync.Client, name string, opts ...redisync.Option) func() {
			m := c.NewMutex(name, opts...)
			m.Lock()
			return m.Unlock
		},
		try: func(c *redisync.Client, name string, opts ...redisync.Option) (bool, func()) {
			m := c.NewMutex(name, opts...)
			return m.TryLock(), m.Unlock
		},
	},
	{
		primitive: redisync.PrimitiveFencedMutex,
		lock: func(c *redisync.Client, name string, opts ...redisync.Option) func() {
			m := c.NewFencedMutex(name, opts...)
			if _, err := m.LockToken(context.Background()); err != nil {
				panic(err)
			}
			return m.Unlock
		},
		try: func(c *redisync.Client, name string, opts ...redisync.Option) (bool, func()) {
			m := c.NewFencedMutex(name, opts...)
			_, ok, _ := m.TryLockToken(context.Background())
			return ok, m.Unlock
		},
	},
	{
		primitive: redisync.PrimitiveRWRead,
		lock: func(c *redisync.Client, name string, opts ...redisync.Option) func() {
			rw := c.NewRWMutex(name, opts...)
			rw.RLock()
			return rw.RUnlock
		},
		try: func(c *redisync.Client, name string, opts ...redisync.Option) (bool, func()) {
			rw := c.NewRWMutex(name, opts...)
			return rw.TryRLock(), rw.RUnlock
		},
	},
	{
		primitive: redisync.PrimitiveRWWrite,
		lock: func(c *redisync.Client, name string, opts ...redisync.Option) func() {
			rw := c.NewRWMutex(name, opts...)
			rw.Lock()
			return rw.Unlock
		},
		try: func(c *redisync.Client, name string, opts ...redisync.Option) (bool, func()) {
			rw := c.NewRWMutex(name, opts...)
			return rw.TryLock(), rw.Unlock
		},
	},
	{
		primitive: redisync.PrimitiveFairMutex,
		lock: func(c *redisync.Client, name string, opts ...redisync.Option) func() {
			fm := c.NewFairMutex(name, opts...)
			fm.Lock()
			return fm.Unlock
		},
		try: func(c *redisync.Client, name string, opts ...redisync.Option) (bool, func()) {
			fm := c.NewFairMutex(name, opts...)
			return fm.TryLock(), fm.Unlock
		},
	},
	{
		primitive: redisync.PrimitiveSemaphore,
		lock: func(c *redisync.Client, name string, opts ...redisync.Option) func() {
			s := c.NewSemaphore(name, 2, opts...)
			if err := s.Acquire(context.Background(), 1); err != nil {
				panic(err)
			}
			return func() { s.Release(1) }
		},
		try: func(c *redisync.Client, name string, opts ...redisync.Option) (bool, func()) {
			s := c.NewSemaphore(name, 2, opts...)
			return s.TryAcquire(1), func() { s.Release(1) }
		},
	},
}

// TestObserverLockCycle checks the events of a lock and unlock of each
// primitive, through a waiting call and through a single attempt, with the
// observer set on the handle.
func TestObserverLockCycle(t *testing.T) {
	c, _ := newClient(t, standalone)
	for _, lc := range lockCycles {
		t.Run(string(lc.primitive), func(t *testing.T) {
			rec := &recorder{}
			name := freshName(t)
			unlock := lc.lock(c, name, redisync.WithObserver(rec))
			time.Sleep(10 * time.Millisecond)
			unlock()
			ok, unlock := lc.try(c, name, redisync.WithObserver(rec))
			require.True(t, ok)
			unlock()

			assert.Equal(t, []redisync.EventKind{
				redisync.EventAcquireAttempt, redisync.EventAcquired, redisync.EventReleased, // Lock, Unlock
				redisync.EventAcquired, redisync.EventReleased, // TryLock, Unlock
			}, rec.kinds(name))
			for _, e := range rec.of(name, 0) {
				assert.Equal(t, lc.primitive, e.Primitive, "%v", e.Kind)
				assert.False(t, e.Reentrant, "%v", e.Kind)
				assert.NoError(t, e.Cause, "%v", e.Kind)
			}
			released := rec.of(name, redisync.EventReleased)
			assert.GreaterOrEqual(t, released[0].Hold, 10*time.Millisecond, "hold time of the first hold")
			assert.Zero(t, rec.of(name, redisync.EventAcquired)[1].Wait, "a TryLock does not wait")
		})
	}
}

// TestObserverQueued checks that a waiting call of a queued primitive reports
// its place in the queue once, after its first attempt and before its
// wake-up, and that a call that acquires at once does not.
func TestObserverQueued(t *testing.T) {
	c, _ := newClient(t, standalone)
	for _, lc := range lockCycles {
		if lc.primitive != redisync.PrimitiveFairMutex && lc.primitive != redisync.PrimitiveSemaphore {
			continue
		}
		t.Run(string(lc.primitive), func(t *testing.T) {
			name := freshName(t)
			rec, release := queueOne(t, c, lc, name)
			release()
			kinds := rec.kinds(name)
			require.GreaterOrEqual(t, len(kinds), 4, "%v", kinds)
			assert.Equal(t, []redisync.EventKind{redisync.EventAcquireAttempt, redisync.EventQueued}, kinds[:2])
			assert.Len(t, rec.of(name, redisync.EventQueued), 1, "%v", kinds)
			assert.Equal(t, []redisync.EventKind{redisync.EventAcquired, redisync.EventReleased}, kinds[len(kinds)-2:])
		})
	}
}

// TestObserverQueuedAgain attacks a waiter's place: it is taken out of the
// queue behind its back, as a reaper that thought it dead would, or only its
// place is deleted and its heartbeat entry kept (a split no script makes,
// which a deletion of one key can). Whichever notices first, its heartbeat
// or its own next attempt, the call queues again at the end and says so: a
// second EventQueued with a Cause; then it still gets the lock.
func TestObserverQueuedAgain(t *testing.T) {
	t.Parallel() // waits for the waiters to queue again: see redistest.Parallel
	c, rc := newClient(t, standalone)
	ctx := context.Background()
	for _, lc := range lockCycles {
		if lc.primitive != redisync.PrimitiveFairMutex && lc.primitive != redisync.PrimitiveSemaphore {
			continue
		}
		for _, attack := range []string{"reaped", "place deleted"} {
			t.Run(string(lc.primitive)+"/"+attack, func(t *testing.T) {
				name := freshName(t)
				alive, queue, want := layout.FairOf(name).Alive, layout.FairOf(name).Queue, ""
				if lc.primitive == redisync.PrimitiveSemaphore {
					l := layout.SemOf(name)
					alive, queue, want = l.Alive, l.Queue, l.Want
				}
				rec, release := queueOne(t, c, lc, name)
				ids, err := rc.Do(ctx, rc.B().Zrange().Key(alive).Min("0").Max("-1").Build()).AsStrSlice()
				require.NoError(t, err)
				require.Len(t, ids, 1, "the waiter's heartbeat is in %s", alive)
				cmds := []rueidis.Completed{rc.B().Zrem().Key(queue).Member(ids[0]).Build()}
				if want != "" {
					cmds = append(cmds, rc.B().Hdel().Key(want).Field(ids[0]).Build())
				}
				if attack == "reaped" {
					cmds = append(cmds, rc.B().Zrem().Key(alive).Member(ids[0]).Build())
				}
				for _, cmd := range cmds {
					require.NoError(t, rc.Do(ctx, cmd).Error())
				}
				require.Eventually(t, func() bool { return len(rec.of(name, redisync.EventQueued)) >= 2 }, 20*time.Second, 5*time.Millisecond,
					"the waiter queued again and said so: %v", rec.kinds(name))
				again := rec.of(name, redisync.EventQueued)[1]
				require.Error(t, again.Cause)
				assert.Contains(t, again.Cause.Error(), "queued again")
				assert.NoError(t, rec.of(name, redisync.EventQueued)[0].Cause, "its first place is no loss")
				release()
			})
		}
	}
}

// A FairMutex waiter whose place was taken out of the queue, woken before
// its heartbeat runs (a minute apart here), learns it from its own attempt,
// which queues it again: it says so too.
func TestObserverQueuedAgainByAttempt(t *testing.T) {
	c, rc := newClient(t, standalone)
	ctx := context.Background()
	name := freshName(t)
	l := layout.FairOf(name)
	holder := c.NewFairMutex(name)
	holder.Lock()
	rec := &recorder{}
	fm := c.NewFairMutex(name, redisync.WithObserver(rec), redisync.WithHeartbeatTimeout(time.Minute))
	locked := make(chan error, 1)
	lockCtx, cancel := context.WithCancel(ctx)
	go func() { locked <- fm.LockContext(lockCtx) }()
	t.Cleanup(func() {
		cancel()
		if <-locked == nil {
			fm.Unlock()
		}
	})
	rec.waitFor(t, name, redisync.EventQueued)
	ids, err := rc.Do(ctx, rc.B().Zrange().Key(l.Alive).Min("0").Max("-1").Build()).AsStrSlice()
	require.NoError(t, err)
	require.Len(t, ids, 1)
	require.NoError(t, rc.Do(ctx, rc.B().Zrem().Key(l.Alive).Member(ids[0]).Build()).Error())
	require.NoError(t, rc.Do(ctx, rc.B().Zrem().Key(l.Queue).Member(ids[0]).Build()).Error())
	require.NoError(t, rc.Do(ctx, rc.B().Publish().Channel(l.Channel).Message(ids[0]).Build()).Error()) // its turn, it thinks
	require.Eventually(t, func() bool { return len(rec.of(name, redisync.EventQueued)) >= 2 }, 5*time.Second, 5*time.Millisecond,
		"the waiter queued again and said so: %v", rec.kinds(name))
	cause := rec.of(name, redisync.EventQueued)[1].Cause
	require.Error(t, cause)
	assert.Contains(t, cause.Error(), "no longer had the waiter's place")
	holder.Unlock()
}

// queueOne makes a call of lc's FairMutex or Semaphore (of 2 permits) wait
// in its queue, recorded by rec, and returns when it has queued; release
// lets it in, and returns once it has locked and unlocked.
func queueOne(t *testing.T, c *redisync.Client, lc lockCycle, name string) (rec *recorder, release func()) {
	t.Helper()
	var unlocks []func()
	for range 2 {
		unlocks = append(unlocks, lc.lock(c, name))
		if lc.primitive == redisync.PrimitiveFairMutex {
			break
		}
	}
	rec = &recorder{}
	locked := make(chan func(), 1)
	go func() { locked <- lc.lock(c, name, redisync.WithObserver(rec)) }()
	var once sync.Once
	release = func() {
		once.Do(func() {
			for _, unlock := range unlocks {
				unlock()
			}
			(<-locked)()
		})
	}
	t.Cleanup(release) // a test that failed still lets the waiter in before its Client closes
	rec.waitFor(t, name, redisync.EventQueued)
	return rec, release
}

// TestObserverClientWide checks that a Client's observer sees its handles'
// events unless a handle sets its own, and that WithObserver(nil) silences a
// handle.
func TestObserverClientWide(t *testing.T) {
	rec, own := &recorder{}, &recorder{}
	c, _ := newClient(t, standalone, redisync.WithObserver(rec))
	name := freshName(t)
	for _, opts := range [][]redisync.Option{nil, {redisync.WithObserver(own)}, {redisync.WithObserver(nil)}} {
		m := c.NewMutex(name, opts...)
		m.Lock()
		//lint:ignore SA2001 only the events of the pair are checked
		m.Unlock()
	}
	assert.Len(t, rec.of(name, redisync.EventAcquired), 1)
	assert.Len(t, own.of(name, redisync.EventAcquired), 1)
}

// TestObserverReentrant checks that a re-entry is reported as a reentrant
// acquisition and that the hold ends once, with the last release.
func TestObserverReentrant(t *testing.T) {
	c, _ := newClient(t, standalone)
	rec := &recorder{}
	name := freshName(t)
	m := c.NewMutex(name, redisync.WithObserver(rec))
	ctx := redisync.WithOwner(context.Background())
	require.NoError(t, m.LockContext(ctx))
	require.NoError(t, m.LockContext(ctx))
	require.NoError(t, m.UnlockContext(ctx))
	require.NoError(t, m.UnlockContext(ctx))
	assert.Equal(t, []redisync.EventKind{
		redisync.EventAcquireAttempt, redisync.EventAcquired,
		redisync.EventAcquireAttempt, redisync.EventAcquired,
		redisync.EventReleased,
	}, rec.kinds(name))
	acquired := rec.of(name, redisync.EventAcquired)
	assert.False(t, acquired[0].Reentrant)
	assert.True(t, acquired[1].Reentrant)
}

// TestObserverLost checks that a lease that runs out is reported once, as
// lost, and that the owner's Unlock afterwards reports nothing more. The
// lease leaves an acquisition on a loaded machine (miniredis under -race)
// time to come back within it: one that comes back after its lease is
// dropped as stale, and reported lost, before the call takes another, and
// the events then describe two holds.
func TestObserverLost(t *testing.T) {
	c, _ := newClient(t, standalone)
	for _, lc := range lockCycles {
		t.Run(string(lc.primitive), func(t *testing.T) {
			rec := &recorder{}
			name := freshName(t)
			unlock := lc.lock(c, name, redisync.WithObserver(rec), redisync.WithLease(400*time.Millisecond))
			lost := rec.waitFor(t, name, redisync.EventLost)
			unlock()
			assert.ErrorIs(t, lost.Cause, redisync.ErrLockLost)
			assert.Equal(t, lc.primitive, lost.Primitive)
			assert.GreaterOrEqual(t, lost.Hold, 200*time.Millisecond)
			assert.Equal(t, []redisync.EventKind{
				redisync.EventAcquireAttempt, redisync.EventAcquired, redisync.EventLost,
			}, rec.kinds(name))
		})
	}
}

// TestObserverForceUnlockAndClose checks that holds ended by ForceUnlock are
// reported as lost, and holds ended by Close as released with ErrClosed.
func TestObserverForceUnlockAndClose(t *testing.T) {
	c, _ := newClient(t, standalone)
	rec := &recorder{}
	name := freshName(t)
	m := c.NewMutex(name, redisync.WithObserver(rec))
	m.Lock()
	_, err := m.ForceUnlock(context.Background())
	require.NoError(t, err)
	m.Unlock()
	m.Lock()
	require.NoError(t, c.Close())
	m.Unlock()
	assert.Equal(t, []redisync.EventKind{
		redisync.EventAcquireAttempt, redisync.EventAcquired, redisync.EventLost,
		redisync.EventAcquireAttempt, redisync.EventAcquired, redisync.EventReleased,
	}, rec.kinds(name))
	assert.ErrorIs(t, rec.of(name, redisync.EventReleased)[0].Cause, redisync.ErrClosed)
}

// TestObserverWakeups checks the wake-ups of a waiter in another Client than
// the holder: by the release's Pub/Sub message, by a resubscription after
// its subscription was killed, and by its timer when the holder's lease runs
// out (an expiry sends no message). Its Client's observer reports the
// subscriptions.
func TestObserverWakeups(t *testing.T) {
	requireReal(t, standalone, "CLIENT KILL")
	holder, _ := newClient(t, standalone)
	rec := &recorder{}
	waiter, _ := newClient(t, standalone, redisync.WithObserver(rec))
	channel := func(name string) string { return "redisson_lock__channel:{" + name + "}" }

	// wait starts a waiter on name and returns its error channel once it waits
	// for a wake-up: subscribed and past its attempt after the confirmation.
	wait := func(t *testing.T, name string) <-chan error {
		errs := make(chan error, 1)
		go func() {
			m := waiter.NewMutex(name)
			ctx, cancel := context.WithTimeout(context.Background(), hang)
			defer cancel()
			err := m.LockContext(ctx)
			if err == nil {
				m.Unlock()
			}
			errs <- err
		}()
		rec.waitFor(t, channel(name), redisync.EventSubscribed)
		time.Sleep(200 * time.Millisecond) // the attempt after the confirmation
		return errs
	}
	done := func(t *testing.T, errs <-chan error) {
		select {
		case err := <-errs:
			require.NoError(t, err)
		case <-time.After(hang):
			t.Fatal("waiter not served")
		}
	}

	t.Run("PubSub", func(t *testing.T) {
		name := freshName(t)
		h := holder.NewMutex(name)
		h.Lock()
		errs := wait(t, name)
		h.Unlock()
		done(t, errs)
		wakes := rec.of(name, redisync.EventWakeup)
		require.Len(t, wakes, 1)
		assert.Equal(t, redisync.WakePubSub, wakes[0].Source)
		assert.False(t, rec.of(channel(name), redisync.EventSubscribed)[0].Resubscribed)
		acquired := rec.of(name, redisync.EventAcquired)
		require.Len(t, acquired, 1)
		assert.GreaterOrEqual(t, acquired[0].Wait, 200*time.Millisecond)
	})
	t.Run("Resubscribe", func(t *testing.T) {
		name := freshName(t)
		h := holder.NewMutex(name)
		h.Lock()
		errs := wait(t, name)
		require.Positive(t, redistest.KillSubscribers(t, standalone))
		require.Eventually(t, func() bool {
			return slices.ContainsFunc(rec.of(name, redisync.EventWakeup),
				func(e redisync.Event) bool { return e.Source == redisync.WakeResubscribe })
		}, hang, 5*time.Millisecond)
		assert.True(t, slices.ContainsFunc(rec.of(channel(name), redisync.EventSubscribed),
			func(e redisync.Event) bool { return e.Resubscribed }), "a resubscription is reported")
		h.Unlock()
		done(t, errs)
	})
	t.Run("Timeout", func(t *testing.T) {
		name := freshName(t)
		h := holder.NewMutex(name, redisync.WithLease(500*time.Millisecond))
		h.Lock()
		errs := wait(t, name)
		done(t, errs)
		wakes := rec.of(name, redisync.EventWakeup)
		require.NotEmpty(t, wakes)
		assert.Equal(t, redisync.WakeTimeout, wakes[len(wakes)-1].Source)
		h.Unlock() // lost by now
	})
	t.Run("AcquireFailed", func(t *testing.T) {
		name := freshName(t)
		h := holder.NewMutex(name)
		h.Lock()
		defer h.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		err := waiter.NewMutex(name).LockContext(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		failed := rec.of(name, redisync.EventAcquireFailed)
		require.Len(t, failed, 1)
		assert.True(t, errors.Is(failed[0].Cause, context.DeadlineExceeded))
		assert.GreaterOrEqual(t, failed[0].Wait, 100*time.Millisecond)
	})
}

// TestObserverRenewalBatches checks that the renewal goroutine reports its
// rounds to the Client's observer: two locks renewed together.
func TestObserverRenewalBatches(t *testing.T) {
	rec := &recorder{}
	c, _ := newClient(t, standalone, redisync.WithObserver(rec), redisync.WithWatchdogTimeout(300*time.Millisecond))
	name := freshName(t)
	a, b := c.NewMutex(name+":a"), c.NewMutex(name+":b")
	a.Lock()
	b.Lock()
	require.Eventually(t, func() bool {
		return slices.ContainsFunc(rec.of("", redisync.EventRenewalBatch),
			func(e redisync.Event) bool { return e.Batch == 2 })
	}, hang, 5*time.Millisecond, "a batch renewing both locks")
	a.Unlock()
	b.Unlock()
	for _, e := range rec.of("", redisync.EventRenewalBatch) {
		assert.Zero(t, e.Failures)
		assert.NoError(t, e.Cause)
		assert.Positive(t, e.Duration)
		assert.Empty(t, e.Primitive)
	}
}

// TestEventKindString checks the names of kinds and sources.
func TestEventKindString(t *testing.T) {
	assert.Equal(t, "Acquired", redisync.EventAcquired.String())
	assert.Equal(t, "Subscribed", redisync.EventSubscribed.String())
	assert.Equal(t, "Queued", redisync.EventQueued.String())
	assert.Equal(t, "EventKind(0)", redisync.EventKind(0).String())
	assert.Equal(t, "PubSub", redisync.WakePubSub.String())
	assert.Equal(t, "Resubscribe", redisync.WakeResubscribe.String())
	assert.Equal(t, "WakeSource(9)", redisync.WakeSource(9).String())
}

// TestObserverHandoverWhileForceUnlocked runs local handovers between the
// goroutines of one observed handle while ForceUnlock ends its holds from
// another goroutine: the end of a term and a handover both report a hold's
// length, and the race detector checks that they do not race on its start.
func TestObserverHandoverWhileForceUnlocked(t *testing.T) {
	c, _ := newClient(t, standalone)
	var handovers, losses atomic.Int64
	obs := redisync.ObserverFunc(func(_ context.Context, e redisync.Event) {
		switch {
		case e.Kind == redisync.EventAcquired && e.LocalHandover:
			handovers.Add(1)
		case e.Kind == redisync.EventLost && errors.Is(e.Cause, redisync.ErrForceUnlocked):
			losses.Add(1)
		}
	})
	m := c.NewMutex(freshName(t), redisync.WithObserver(obs))
	// The loops run for 400 ms, and on until both kinds of event were seen
	// (miniredis under load may hand no hold over in 400 ms), up to hang.
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil && (time.Since(start) < 400*time.Millisecond || handovers.Load() == 0 || losses.Load() == 0) {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	})
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				if m.LockContext(ctx) == nil {
					_ = m.UnlockContext(context.Background())
				}
			}
		})
	}
	wg.Go(func() {
		for ctx.Err() == nil {
			_, _ = m.ForceUnlock(context.Background())
			time.Sleep(time.Millisecond)
		}
	})
	wg.Wait()
	assert.Positive(t, handovers.Load(), "handovers happened")
	assert.Positive(t, losses.Load(), "ForceUnlock ended holds")
}

// A Once's run is a hold of its claim; a Do that finds the function done,
// and a WaitGroup's Wait at zero, end with EventCompleted.
func TestObserverOnceAndWaitGroup(t *testing.T) {
	c, _ := newClient(t, standalone)
	rec := &recorder{}
	ctx := context.Background()
	name := "once:" + freshName(t)
	o := c.NewOnce(name, redisync.WithObserver(rec))
	require.NoError(t, o.Do(ctx, func(context.Context) error { return nil }))
	require.NoError(t, o.Do(ctx, func(context.Context) error { return nil }))
	assert.Equal(t, []redisync.EventKind{
		redisync.EventAcquireAttempt, redisync.EventAcquired, redisync.EventReleased,
		redisync.EventAcquireAttempt, redisync.EventCompleted,
	}, rec.kinds(name))
	assert.Equal(t, redisync.PrimitiveOnce, rec.of(name, redisync.EventCompleted)[0].Primitive)

	wgName := "wg:" + freshName(t)
	require.NoError(t, c.NewWaitGroup(wgName, redisync.WithObserver(rec)).Wait(ctx))
	assert.Equal(t, []redisync.EventKind{redisync.EventAcquireAttempt, redisync.EventCompleted}, rec.kinds(wgName))
	assert.Equal(t, redisync.PrimitiveWaitGroup, rec.of(wgName, redisync.EventCompleted)[0].Primitive)
	assert.Equal(t, "Completed", redisync.EventCompleted.String())
}

// A FairMutex waiter whose heartbeat lapses (its renewals held up) loses its
// place, and says so even when its next attempt finds the lock free and
// takes it at once, without queueing anew: an EventQueued with a Cause comes
// before its EventAcquired. (Nothing said so: the chaos suite's FIFO
// checker, I4, then took a caller served in between for one that overtook
// the waiter's confirmed place, on Redis Cluster after F16.)
func TestFairMutexLapsedPlaceIsReportedBeforeATakeAtOnce(t *testing.T) {
	name := freshName(t)
	rec := &recorder{}
	c, lc := newLateClient(t, standalone, redisync.WithObserver(rec), redisync.WithHeartbeatTimeout(300*time.Millisecond))
	other, _ := newClient(t, standalone)
	holder := other.NewFairMutex(name)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	warm := c.NewFairMutex(name) // loads the scripts: held calls are no NOSCRIPT
	require.NoError(t, warm.LockContext(ctx))
	require.NoError(t, warm.UnlockContext(ctx))
	require.NoError(t, holder.LockContext(ctx))

	lc.Hold(scripts.FairHeartbeat, 1000) // the waiter's heartbeat lapses
	got := make(chan error, 1)
	go func() { got <- c.NewFairMutex(name).LockContext(ctx) }()
	rec.waitFor(t, name, redisync.EventQueued)
	queued := time.Now()
	for {
		lc.Hold(scripts.FairAcquire, 1) // its attempt after the lapse waits
		require.Eventually(t, func() bool { return lc.Catches(scripts.FairAcquire) }, hang, 5*time.Millisecond,
			"the waiter tries again once its heartbeat lapsed")
		if time.Since(queued) >= 300*time.Millisecond {
			break // no heartbeat of its ticket was let through: it lapsed
		}
		// An attempt before the lapse: the one the waiter makes once its
		// subscription is confirmed. It finds the lock taken and waits.
		require.NoError(t, lc.DeliverOldest(t, scripts.FairAcquire).Error())
	}
	require.NoError(t, holder.UnlockContext(ctx)) // the waiter's place is gone: the lock goes free
	lc.DeliverAll()                               // its attempt finds the lock free and takes it
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(hang):
		t.Fatal("the waiter did not get the free lock")
	}
	var kinds []redisync.EventKind
	var lost bool
	for _, e := range rec.of(name, 0) {
		if e.Kind == redisync.EventQueued && e.Cause != nil {
			lost = true
		}
		if e.Kind == redisync.EventQueued || e.Kind == redisync.EventAcquired {
			kinds = append(kinds, e.Kind)
		}
	}
	assert.True(t, lost, "the lapse was reported: %v", kinds)
	assert.Equal(t, redisync.EventAcquired, kinds[len(kinds)-1], "in order: %v", kinds)
}
