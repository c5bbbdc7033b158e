package redisync_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/scripts"
)

// These tests attack hold identity: a command whose caller gave up still
// reaches Redis later, after the same owner's next commands (see lateClient).
// Each hold has its own identity in Redis, so such a command finds nothing of
// a newer hold to change.

// ran fails the test unless a late call ran in Redis (a reply, or a nil
// reply), rather than failing there (NOSCRIPT would make a test pass for
// nothing).
func ran(t *testing.T, res rueidis.RedisResult) {
	t.Helper()
	if err := res.Error(); err != nil && !rueidis.IsRedisNil(err) {
		t.Fatalf("the late call did not run: %v", err)
	}
}

// warmUp runs every primitive once through c, so that Redis knows every
// script before a test holds a call back.
func warmUp(t *testing.T, c *redisync.Client) {
	t.Helper()
	ctx := context.Background()
	name := freshName(t) + ":warm-up"
	m := c.NewMutex(name)
	for force := range 2 {
		m.Lock()
		if force == 1 {
			_, _ = m.ForceUnlock(ctx)
		}
		m.Unlock()
	}
	f := c.NewFencedMutex(name + ":fenced")
	_, err := f.LockToken(ctx)
	require.NoError(t, err)
	f.Unlock()
	rw := c.NewRWMutex(name + ":rw")
	rw.RLock()
	//lint:ignore SA2001 running the scripts once loads them
	rw.RUnlock()
	rw.Lock()
	//lint:ignore SA2001 running the scripts once loads them
	rw.Unlock()
	fm := c.NewFairMutex(name + ":fair")
	for force := range 2 {
		fm.Lock()
		if force == 1 {
			_, _ = fm.ForceUnlock(ctx)
		}
		fm.Unlock()
	}
	s := c.NewSemaphore(name+":sem", 1)
	require.NoError(t, s.Acquire(ctx, 1))
	s.Release(1)
}

// short returns a context that ends after d.
func short(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// lateReleaseCase is a lock whose release a test holds back.
type lateReleaseCase struct {
	name    string
	release *scripts.Script
	// lock and unlock take and leave the hold through the handle under
	// test; unlock gets a context that ends before the release arrives.
	lock   func()
	unlock func(ctx context.Context) error
	err    func() error
	// rival tries to take the lock from another Client.
	rival func() bool
}

// A release whose caller gave up lands after the owner's next acquire. It
// must not end that newer hold: before hold identities, the new hold adopted
// the owner's field and the late release deleted it, and a rival got in.
func TestLateReleaseSparesNextHold(t *testing.T) {
	lease := redisync.WithLease(500 * time.Millisecond)
	c, late := newLateClient(t, standalone)
	warmUp(t, c)
	rivals, _ := newClient(t, standalone)
	name := freshName(t)
	m := c.NewMutex(name+":mutex", lease)
	fm := c.NewFairMutex(name+":fair", lease)
	w := c.NewRWMutex(name+":write", lease)
	r := c.NewRWMutex(name+":read", lease)
	for _, tc := range []lateReleaseCase{
		{name: "Mutex", release: scripts.MutexRelease, lock: m.Lock, unlock: m.UnlockContext, err: m.Err,
			rival: rivals.NewMutex(name + ":mutex").TryLock},
		{name: "FairMutex", release: scripts.FairRelease, lock: fm.Lock, unlock: fm.UnlockContext, err: fm.Err,
			rival: rivals.NewFairMutex(name + ":fair").TryLock},
		{name: "RWMutex write", release: scripts.RWWriteUnlock, lock: w.Lock, unlock: w.UnlockContext, err: w.Err,
			rival: rivals.NewRWMutex(name + ":write").TryRLock},
		{name: "RWMutex read", release: scripts.RWReadUnlock, lock: r.RLock, unlock: r.RUnlockContext, err: r.Err,
			rival: rivals.NewRWMutex(name + ":read").TryLock},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.lock()
			// The release and any repeat of it are held back.
			late.Hold(tc.release, 2)
			err := tc.unlock(short(t, 100*time.Millisecond))
			require.Error(t, err, "the release was held back")
			tc.lock() // a new hold, once the previous one is gone or its lease ran out
			for late.Caught() > 0 {
				ran(t, late.Deliver(t))
			}
			assert.False(t, tc.rival(), "a late release of the previous hold ended the current one: two holders")
			assert.NoError(t, tc.err(), "the current hold was reported lost")
			require.NoError(t, tc.unlock(context.Background()))
		})
	}
}

// An acquire whose caller gave up lands after the call undid it. It must not
// take the lock for nobody: the undo leaves a mark that refuses it.
func TestLateAcquireAfterUndoTakesNothing(t *testing.T) {
	c, late := newLateClient(t, standalone)
	warmUp(t, c)
	name := freshName(t)
	m := c.NewMutex(name + ":mutex")
	f := c.NewFencedMutex(name + ":fenced")
	fm := c.NewFairMutex(name + ":fair")
	w := c.NewRWMutex(name + ":write")
	r := c.NewRWMutex(name + ":read")
	for _, tc := range []struct {
		name    string
		acquire *scripts.Script
		lock    func(ctx context.Context) error
		locked  func(ctx context.Context) (bool, error)
	}{
		{"Mutex", scripts.MutexAcquire, m.LockContext, m.IsLocked},
		{"FencedMutex", scripts.FencedAcquire, f.LockContext, f.IsLocked},
		{"FairMutex", scripts.FairAcquire, fm.LockContext, fm.IsLocked},
		{"RWMutex write", scripts.RWWriteLock, w.LockContext, w.IsLocked},
		{"RWMutex read", scripts.RWReadLock, r.RLockContext, r.IsLocked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			late.Hold(tc.acquire, 1)
			err := tc.lock(short(t, 100*time.Millisecond))
			require.ErrorIs(t, err, context.DeadlineExceeded)
			ran(t, late.Deliver(t))
			locked, err := tc.locked(context.Background())
			require.NoError(t, err)
			assert.False(t, locked, "the late acquire took the lock after LockContext had given up: held for nobody")
		})
	}
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

// RLock on a handle whose own owner holds the write lock waits, as
// sync.RWMutex's does; before, it entered at once (a downgrade is only for an
// explicit owner).
func TestRWMutexReadWaitsForOwnHandlesWriter(t *testing.T) {
	name := freshName(t)
	c, _ := newClient(t, standalone)
	rw := c.NewRWMutex(name)
	rw.Lock()
	assert.False(t, rw.TryRLock(), "a reader entered while its own handle's writer held the lock")
	assert.ErrorIs(t, rw.RLockContext(short(t, 200*time.Millisecond)), context.DeadlineExceeded)
	got := make(chan struct{})
	go func() {
		rw.RLock()
		close(got)
	}()
	time.Sleep(50 * time.Millisecond)
	select {
	case <-got:
		t.Fatal("RLock returned while the handle's writer held the lock")
	default:
	}
	rw.Unlock()
	select {
	case <-got:
	case <-time.After(hang):
		t.Fatal("RLock did not get the lock after Unlock")
	}
	rw.RUnlock()
	// An explicit owner may still take the read lock under its write lock.
	owner := redisync.WithOwner(context.Background())
	require.NoError(t, rw.LockContext(owner))
	require.NoError(t, rw.RLockContext(owner))
	require.NoError(t, rw.UnlockContext(owner))
	require.NoError(t, rw.RUnlockContext(owner))
}

// Every read hold of an owner keeps the lease of the latest: before, a second
// RLock moved the owner's lease but only its own timeout key, so the first
// key ran out early and another reader's release deleted the lock under a
// live read hold.
func TestRWMutexReadHoldsShareTheLatestLease(t *testing.T) {
	const lease = 2 * time.Second
	c, _ := newClient(t, standalone)
	others, _ := newClient(t, standalone)
	name := freshName(t)
	rw := c.NewRWMutex(name, redisync.WithLease(lease))
	start := time.Now()
	rw.RLock()
	time.Sleep(lease / 2)
	rw.RLock()
	//lint:ignore SA2001 the second read hold's lease, then its release, is what is tested
	rw.RUnlock()
	time.Sleep(time.Until(start.Add(lease + 300*time.Millisecond)))
	reader := others.NewRWMutex(name)
	require.True(t, reader.TryRLock())
	reader.RUnlock()
	require.Less(t, time.Since(start), lease*3/2, "the machine was too slow for this test's timing")
	assert.False(t, others.NewRWMutex(name).TryLock(), "a writer got in while a read hold was live")
	assert.NoError(t, rw.Err())
	rw.RUnlock()
}

// A read hold whose timeout key is gone is lost, and its renewal says so.
func TestRWMutexRenewalFindsTimeoutKeyGone(t *testing.T) {
	c, rc := newClient(t, standalone)
	name := freshName(t)
	rw := c.NewRWMutex(name, redisync.WithWatchdogTimeout(300*time.Millisecond))
	rw.RLock()
	ctx := context.Background()
	timeouts, err := rc.Do(ctx, rc.B().Keys().Pattern(layout.Tagged(name)+":*:rwlock_timeout:*").Build()).AsStrSlice()
	require.NoError(t, err)
	require.Len(t, timeouts, 1)
	require.NoError(t, rc.Do(ctx, rc.B().Del().Key(timeouts...).Build()).Error())
	select {
	case <-rw.Done():
	case <-time.After(hang):
		t.Fatal("the renewal did not notice the read hold's timeout key was gone")
	}
	assert.ErrorIs(t, rw.Err(), redisync.ErrLockLost)
	assert.ErrorIs(t, rw.Err(), redisync.ErrHoldGone, "the loss's cause")
	rw.RUnlock()
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

// ForceUnlock ends the holds whose entries it deleted, not a hold taken right
// after it by a waiter its own message woke.
func TestForceUnlockSparesLaterHold(t *testing.T) {
	c, late := newLateClient(t, standalone)
	warmUp(t, c)
	name := freshName(t)
	for _, tc := range []struct {
		name   string
		script *scripts.Script
		a, b   interface {
			Lock()
			Unlock()
			LockContext(context.Context) error
			ForceUnlock(context.Context) (bool, error)
			Done() <-chan struct{}
			Err() error
		}
	}{
		{"Mutex", scripts.MutexForceUnlock, c.NewMutex(name + ":mutex"), c.NewMutex(name + ":mutex")},
		{"FairMutex", scripts.FairForceUnlock, c.NewFairMutex(name + ":fair"), c.NewFairMutex(name + ":fair")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.a.Lock()
			got := make(chan error, 1)
			go func() { got <- tc.b.LockContext(context.Background()) }()
			time.Sleep(100 * time.Millisecond) // b waits
			late.DelayReply(tc.script, 1)
			forced := make(chan bool, 1)
			go func() {
				ok, err := tc.a.ForceUnlock(context.Background())
				assert.NoError(t, err)
				forced <- ok
			}()
			select {
			case err := <-got: // woken by the force unlock's own message
				require.NoError(t, err)
			case <-time.After(hang):
				t.Fatal("the waiter was not woken")
			}
			late.Deliver(t)
			assert.True(t, <-forced)
			assert.ErrorIs(t, tc.a.Err(), redisync.ErrLockLost, "the forced hold")
			assert.ErrorIs(t, tc.a.Err(), redisync.ErrForceUnlocked, "the loss's cause")
			assert.NoError(t, tc.b.Err(), "the hold taken after the force unlock was ended by it")
			select {
			case <-tc.b.Done():
				t.Error("the later hold's Done is closed")
			default:
			}
			tc.a.Unlock() // acknowledges the loss
			tc.b.Unlock()
		})
	}
}

// UnlockContext with a context that has already ended still releases the
// lock: before, nothing was sent and the lock stayed for a whole lease.
func TestUnlockContextEndedStillReleases(t *testing.T) {
	c, _ := newClient(t, standalone)
	others, _ := newClient(t, standalone)
	name := freshName(t)
	m := c.NewMutex(name)
	m.Lock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := m.UnlockContext(ctx)
	if err != nil {
		assert.ErrorIs(t, err, context.Canceled)
	}
	rival := others.NewMutex(name)
	require.NoError(t, rival.LockContext(short(t, 5*time.Second)), "the lock was left held after UnlockContext")
	rival.Unlock()
	select {
	case <-m.Done():
	case <-time.After(hang):
		t.Fatal("the hold did not end")
	}
	assert.NoError(t, m.Err(), "the release went through")
}

// A call waits for another call of the same owner only as long as its
// context allows, and a TryLock does not wait for another call's round trip.
func TestOwnerCallsHonourContext(t *testing.T) {
	c, late := newLateClient(t, standalone)
	warmUp(t, c)
	name := freshName(t)
	m := c.NewMutex(name + ":mutex")
	fm := c.NewFairMutex(name + ":fair")
	s := c.NewSemaphore(name+":sem", 2)
	for _, tc := range []struct {
		name    string
		acquire *scripts.Script
		slow    func()
		waiting func(ctx context.Context) error
		try     func() bool
		undo    func()
	}{
		{"Mutex", scripts.MutexAcquire, m.Lock, m.LockContext, m.TryLock, m.Unlock},
		{"FairMutex", scripts.FairAcquire, fm.Lock, fm.LockContext, fm.TryLock, fm.Unlock},
		{"Semaphore", scripts.SemAcquire, func() { _ = s.Acquire(context.Background(), 1) },
			func(ctx context.Context) error { return s.Acquire(ctx, 1) }, func() bool { return s.TryAcquire(1) },
			func() { s.Release(1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			late.Hold(tc.acquire, 1)
			slow := make(chan struct{})
			go func() {
				tc.slow() // its request stalls in the network
				close(slow)
			}()
			require.Eventually(t, func() bool { return late.Caught() == 1 }, hang, time.Millisecond)
			// Let the stalled call go after 3 s, so that a blocked call
			// shows as slow rather than as a hang.
			timer := time.AfterFunc(3*time.Second, late.DeliverAll)
			defer timer.Stop()
			start := time.Now()
			err := tc.waiting(short(t, 100*time.Millisecond))
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Less(t, time.Since(start), time.Second, "the call waited past its context for another call of its owner")
			start = time.Now()
			assert.False(t, tc.try())
			assert.Less(t, time.Since(start), time.Second, "TryLock waited for another call's round trip")
			timer.Stop()
			late.DeliverAll()
			<-slow
			tc.undo()
		})
	}
}

// An acquire whose reply is read after the lease it set could have run out
// (its request or its reply held up): meanwhile the lock expired in Redis
// and another process took it. The late reply must not be returned as a
// hold: the call goes on waiting, and gets the lock when the other releases
// it. Seen in the chaos suite under F10 (RELIABILITY.md, Open); without the
// check in tryHold, LockContext returned nil with the other inside.
func TestMutexLateAcquireReplyIsNoHold(t *testing.T) {
	tg := standalone
	name := freshName(t)
	c, lc := newLateClient(t, tg, redisync.WithWatchdogTimeout(time.Second))
	other, _ := newClient(t, tg)
	m, rival := c.NewMutex(name), other.NewMutex(name)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	require.NoError(t, m.LockContext(ctx)) // loads the scripts: the held-up reply is no NOSCRIPT
	require.NoError(t, m.UnlockContext(ctx))
	lc.DelayReply(scripts.MutexAcquire, 1)
	got := make(chan error, 1)
	go func() { got <- m.LockContext(ctx) }()
	require.Eventually(t, func() bool { return lc.Caught() == 1 }, 5*time.Second, 5*time.Millisecond)
	time.Sleep(1300 * time.Millisecond) // past the 1 s lease: the lock expires in Redis
	require.NoError(t, rival.LockContext(ctx), "the expired lock is free")
	late := lc.Deliver(t) // the late reply: "acquired" (nil), 1.3 s ago
	require.True(t, rueidis.IsRedisNil(late.Error()), "the held-up attempt took the lock: %v", late.Error())
	select {
	case err := <-got:
		t.Fatalf("LockContext returned %v on a reply that came after its lease, with another process inside", err)
	case <-time.After(500 * time.Millisecond):
	}
	require.NoError(t, rival.UnlockContext(ctx))
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting call did not get the lock after the other released it")
	}
	n, err := m.HoldCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "held in Redis")
	require.NoError(t, m.UnlockContext(ctx))
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
