package redisync_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
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
	"github.com/go-redisync/redisync/internal/state"
)

// javaPerm stands in for a Java service's Redisson RPermitExpirableSemaphore
// called name (redistest's scripts, written from Redisson's protocol). Its
// clock is the server's, read before each call, as a Java client's in step
// with it would be. Its permit ids are 32 hex digits, recorded as their 16
// bytes (recent Redisson) or, with text set, as the digits (older 3.x).
type javaPerm struct {
	t       *testing.T
	rc      rueidis.Client
	l       layout.ExpirableSem
	publish string
	text    bool
}

// member is what this Java client records for the permit id.
func (j *javaPerm) member(id string) string {
	if j.text {
		return id
	}
	b, err := hex.DecodeString(id)
	require.NoError(j.t, err)
	return string(b)
}

// newPermitID returns a fresh id in Redisson's form.
func newPermitID(t *testing.T) string {
	b := make([]byte, 16)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

func newJavaPerm(t *testing.T, rc rueidis.Client, name string) *javaPerm {
	publish := "publish"
	if rc.Mode() == rueidis.ClientModeCluster {
		publish = "spublish"
	}
	return &javaPerm{t: t, rc: rc, l: layout.ExpirableSemOf(name), publish: publish}
}

func (j *javaPerm) now() int64 {
	ms, err := state.ServerMillis(context.Background(), j.rc)
	require.NoError(j.t, err)
	return ms
}

// tryAcquire is tryAcquire(leaseTime) for the permit id: lease 0 is none.
func (j *javaPerm) tryAcquire(id string, lease time.Duration) bool {
	now := j.now()
	end := int64(layout.ExpirableSemNoLease)
	if lease > 0 {
		end = now + lease.Milliseconds()
	}
	s, err := j.rc.Do(context.Background(), j.rc.B().Eval().Script(redistest.JavaPermTryAcquire).Numkeys(3).
		Key(j.l.Key, j.l.Leases, j.l.Channel).
		Arg("1", strconv.FormatInt(end, 10), strconv.FormatInt(now, 10), j.publish, j.member(id)).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return false
	}
	require.NoError(j.t, err)
	return s == "OK"
}

// release is tryRelease(permitId): whether the permit was taken in its lease.
func (j *javaPerm) release(id string) bool {
	n, err := j.rc.Do(context.Background(), j.rc.B().Eval().Script(redistest.JavaPermRelease).Numkeys(3).
		Key(j.l.Key, j.l.Channel, j.l.Leases).Arg(j.member(id), strconv.FormatInt(j.now(), 10), j.publish).Build()).AsInt64()
	require.NoError(j.t, err)
	return n == 1
}

func (j *javaPerm) free() int64 {
	n, err := j.rc.Do(context.Background(), j.rc.B().Get().Key(j.l.Key).Build()).AsInt64()
	require.NoError(j.t, err)
	return n
}

// available returns the free permits of s.
func available(ctx context.Context, t *testing.T, s *redisync.ExpirableSemaphore) int64 {
	t.Helper()
	n, err := s.Available(ctx)
	require.NoError(t, err)
	return n
}

// acquireIn takes a permit of s, leased for a minute, in a goroutine of its
// own, and sends its id to got.
func acquireIn(ctx context.Context, t *testing.T, s *redisync.ExpirableSemaphore, got chan<- string) {
	go func() {
		id, err := s.Acquire(ctx, time.Minute)
		assert.NoError(t, err)
		got <- id
	}()
}

// notYet fails t if got has a result within d.
func notYet[T any](t *testing.T, got <-chan T, d time.Duration, what string) {
	t.Helper()
	select {
	case v := <-got:
		t.Fatalf("%s: returned %v", what, v)
	case <-time.After(d):
	}
}

// An ExpirableSemaphore takes permits with ids and leases: Acquire waits,
// TryAcquire does not, Release wakes a waiter at once and answers for each
// id, a lease that ends gives its permit back without a release (the waiter
// gets it then), a renewed lease does not end, and the bad inputs panic.
func TestExpirableSemaphore(t *testing.T) {
	forEachTopology(t, func(t *testing.T, tg *redisserver.Target) {
		name := "xsem:" + freshName(t)
		c, _ := newClient(t, tg)
		s := c.NewExpirableSemaphore(name, 3)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		free, err := s.Available(ctx)
		require.NoError(t, err)
		assert.EqualValues(t, 3, free, "a name never used has its size")

		a, err := s.Acquire(ctx, 0)
		require.NoError(t, err)
		assert.Len(t, a, 32, "an id as Redisson's: 32 hex digits")
		bc, err := s.AcquireN(ctx, 2, time.Minute)
		require.NoError(t, err)
		require.Len(t, bc, 2)
		assert.NotEqual(t, bc[0], bc[1])
		assert.NotContains(t, bc, a)
		_, ok := s.TryAcquire(time.Minute)
		assert.False(t, ok, "none free")
		none, err := s.AcquireN(ctx, 0, time.Minute)
		require.NoError(t, err)
		assert.Empty(t, none)

		other, _ := newClient(t, tg)
		waiter := other.NewExpirableSemaphore(name, 3)
		got := make(chan string, 1)
		acquireIn(ctx, t, waiter, got)
		notYet(t, got, 100*time.Millisecond, "Acquire with no permit free")
		released := time.Now()
		require.NoError(t, s.Release(ctx, bc[0]))
		d := <-got
		assert.Less(t, time.Since(released), 500*time.Millisecond, "woken by the release's message, not the 1 s look")
		assert.ErrorIs(t, s.Release(ctx, bc[0]), redisync.ErrNotHeld, "a permit released already")

		short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancelShort()
		_, err = s.Acquire(short, time.Minute)
		assert.ErrorIs(t, err, context.DeadlineExceeded)

		// A short lease ends without a release: the waiter gets its permit
		// then, the holder's Release says it was not held.
		require.NoError(t, s.Release(ctx, d))
		e, err := s.Acquire(ctx, 300*time.Millisecond)
		require.NoError(t, err)
		acquireIn(ctx, t, waiter, got)
		begun := time.Now()
		f := <-got
		assert.Greater(t, time.Since(begun), 150*time.Millisecond, "the permit came back before its lease ended")
		assert.ErrorIs(t, s.Release(ctx, e), redisync.ErrNotHeld, "its lease ended and the waiter took it")
		assert.ErrorIs(t, s.Renew(ctx, e, time.Minute), redisync.ErrNotHeld)

		// A renewed lease does not end; a lease that ended before its
		// release says so.
		require.NoError(t, waiter.Release(ctx, f))
		g, ok := s.TryAcquire(200 * time.Millisecond)
		require.True(t, ok)
		require.NoError(t, s.Renew(ctx, g, time.Minute))
		require.NoError(t, s.Release(ctx, bc[1]))
		h, ok := s.TryAcquire(50 * time.Millisecond)
		require.True(t, ok)
		time.Sleep(400 * time.Millisecond)
		err = s.Release(ctx, g, h)
		assert.ErrorIs(t, err, redisync.ErrLockLost)
		assert.ErrorIs(t, err, redisync.ErrLeaseExpired)
		assert.Contains(t, err.Error(), "1 of 2 permits released after their lease ended")
		require.NoError(t, s.Release(ctx, a))
		free, err = s.Available(ctx)
		require.NoError(t, err)
		assert.EqualValues(t, 3, free, "every permit back, none twice")

		assert.Panics(t, func() { c.NewExpirableSemaphore(name, -1) })
		assert.Panics(t, func() { _, _ = s.Acquire(ctx, -time.Second) })
		assert.Panics(t, func() { _, _ = s.TryAcquire(time.Microsecond) })
		assert.Panics(t, func() { _, _ = s.AcquireN(ctx, -1, 0) })
		assert.Panics(t, func() { _ = s.Renew(ctx, a, -1) })
	})
}

// A Java RPermitExpirableSemaphore of the same name shares the permits:
// Java's take makes Go wait and Java's release wakes Go at once; Go's
// release publishes the count as Redisson's does; an id taken on one side
// is released or renewed on the other; a Java holder that dies (its permit
// never released) lets Go in when its lease ends.
func TestExpirableSemaphoreRedissonInterop(t *testing.T) {
	forEachTopology(t, func(t *testing.T, tg *redisserver.Target) {
		name := "xsem:" + freshName(t)
		c, rc := newClient(t, tg)
		s := c.NewExpirableSemaphore(name, 2)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		goID, err := s.Acquire(ctx, time.Minute) // the first use sets the count: 2
		require.NoError(t, err)
		java := newJavaPerm(t, rc, name)
		java1, java3 := newPermitID(t), newPermitID(t)
		require.True(t, java.tryAcquire(java1, time.Minute))
		assert.False(t, java.tryAcquire(newPermitID(t), time.Minute), "Go's permit is not Java's to take")

		got := make(chan string, 1)
		acquireIn(ctx, t, s, got)
		notYet(t, got, 100*time.Millisecond, "Go took a permit Java holds")
		released := time.Now()
		assert.True(t, java.release(java1))
		second := <-got
		assert.Less(t, time.Since(released), 500*time.Millisecond, "woken by Java's message")

		messages := make(chan string, 4)
		stop := subscribe(t, newRueidis(t, tg), java.l.Channel, func(m rueidis.PubSubMessage) {
			select {
			case messages <- m.Message:
			default: // the later releases' counts: only the first is looked at
			}
		})
		defer stop()
		require.NoError(t, s.Release(ctx, second))
		select {
		case m := <-messages:
			assert.Equal(t, "1", m, "the count, as Redisson publishes it")
		case <-time.After(5 * time.Second):
			t.Fatal("Go's release published nothing a Java waiter would hear")
		}
		assert.EqualValues(t, 1, java.free())
		assert.True(t, java.release(goID), "Java releases a permit Go took, by its id")
		require.True(t, java.tryAcquire(java3, 200*time.Millisecond))
		require.NoError(t, s.Renew(ctx, java3, time.Minute), "Go renews a permit Java took")
		time.Sleep(400 * time.Millisecond)
		require.NoError(t, s.Release(ctx, java3), "its lease, renewed, had not ended")

		// A Java holder that dies: its permits come back when their lease
		// ends, and a waiting Go call gets one then.
		require.True(t, java.tryAcquire(newPermitID(t), 500*time.Millisecond))
		require.True(t, java.tryAcquire(newPermitID(t), 500*time.Millisecond))
		begun := time.Now()
		id, err := s.Acquire(ctx, time.Minute)
		require.NoError(t, err)
		waited := time.Since(begun)
		assert.Greater(t, waited, 300*time.Millisecond, "in before the dead holder's lease ended")
		assert.Less(t, waited, 3*time.Second, "the waiter looks again when the earliest lease ends")
		require.NoError(t, s.Release(ctx, id))

		// An older Redisson 3.x records ids as text: Go releases and renews
		// its permits all the same, but it cannot release Go's by id (it
		// looks for the text; Go records the bytes, as recent Redisson does).
		old := newJavaPerm(t, rc, name)
		old.text = true
		oldID := newPermitID(t)
		require.True(t, old.tryAcquire(oldID, 200*time.Millisecond))
		require.NoError(t, s.Renew(ctx, oldID, time.Minute))
		time.Sleep(400 * time.Millisecond)
		require.NoError(t, s.Release(ctx, oldID), "its lease, renewed, had not ended")
		id, err = s.Acquire(ctx, time.Minute)
		require.NoError(t, err)
		assert.False(t, old.release(id), "an older Java finds no permit of Go's id (documented)")
		require.NoError(t, s.Release(ctx, id))
	})
}

// Attacks on the permits: an acquire whose caller gave up before it was
// sent lands later and takes nothing; one that took its permits but whose
// reply was lost is undone when its caller gives up; a release whose reply
// is lost is sent again, answers as the first, and gives back once.
func TestExpirableSemaphoreLateAndLost(t *testing.T) {
	tg := standalone
	name := "xsem:" + freshName(t)
	c, lc := newLateClient(t, tg)
	s := c.NewExpirableSemaphore(name, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	free := func() int64 { return available(ctx, t, s) }
	id, err := s.Acquire(ctx, time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.Release(ctx, id)) // the count is set: 2

	lc.Hold(scripts.ExpirableAcquire, 1)
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	_, err = s.Acquire(short, time.Minute)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	lc.Deliver(t) // the attempt arrives after its call gave up
	assert.EqualValues(t, 2, free(), "a late copy took a permit")

	lc.DelayReply(scripts.ExpirableAcquire, 1)
	short2, cancelShort2 := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort2()
	_, err = s.Acquire(short2, time.Minute)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.EqualValues(t, 2, free(), "the permit taken by an attempt whose reply was lost was not given back")
	lc.Deliver(t)

	ids, err := s.AcquireN(ctx, 2, time.Minute)
	require.NoError(t, err)
	lc.DelayReply(scripts.ExpirableRelease, 1)
	lc.DeliverAllLater(2500 * time.Millisecond) // past an attempt's 2 s budget: the release is sent again
	require.NoError(t, s.Release(ctx, ids...), "the repeat answers as the first release that ran")
	assert.EqualValues(t, 2, free(), "a repeated release gave back twice")
}

// acquired is what an Acquire returned.
type acquired struct {
	id  string
	err error
}

// acquireLater runs s.Acquire(ctx, lease) in a goroutine and sends what it
// returned.
func acquireLater(ctx context.Context, s *redisync.ExpirableSemaphore, lease time.Duration) <-chan acquired {
	got := make(chan acquired, 1)
	go func() {
		id, err := s.Acquire(ctx, lease)
		got <- acquired{id, err}
	}()
	return got
}

// waitsForRival checks that the Acquire whose outcome got carries does not
// return for quiet while the rival holds the permit rid, releases it, and
// returns what the Acquire then got.
func waitsForRival(ctx context.Context, t *testing.T, got <-chan acquired, rival *redisync.ExpirableSemaphore, rid string, quiet time.Duration) acquired {
	t.Helper()
	select {
	case r := <-got:
		t.Fatalf("Acquire returned %q, %v with another holder inside (a grant read after its lease)", r.id, r.err)
	case <-time.After(quiet):
	}
	require.NoError(t, rival.Release(ctx, rid))
	select {
	case r := <-got:
		require.NoError(t, r.err)
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting call did not get the permit after the other released it")
	}
	return acquired{}
}

// An ExpirableSemaphore acquire whose reply is read after its permits'
// lease ran out returns no permit: by then they came back and another took
// them. Acquire and TryAcquire both; the count stays whole.
func TestExpirableSemaphoreLateAcquireReplyIsNoHold(t *testing.T) {
	tg := standalone
	name := t.Name() + uniqueSuffix()
	c, lc := newLateClient(t, tg)
	other, _ := newClient(t, tg)
	s, rival := c.NewExpirableSemaphore(name, 1), other.NewExpirableSemaphore(name, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const lease = 500 * time.Millisecond

	id, err := s.Acquire(ctx, lease) // loads the scripts: the held-up reply is no NOSCRIPT
	require.NoError(t, err)
	require.NoError(t, s.Release(ctx, id))

	// A waiting Acquire.
	lc.DelayReply(scripts.ExpirableAcquire, 1)
	got := acquireLater(ctx, s, lease)
	require.Eventually(t, func() bool { return lc.Caught() == 1 }, 5*time.Second, 5*time.Millisecond)
	time.Sleep(lease + 200*time.Millisecond) // the permit's lease ends in Redis
	rid, err := rival.Acquire(ctx, 10*time.Second)
	require.NoError(t, err, "the expired permit is free")
	lc.Deliver(t) // the late reply: taken, 700 ms ago
	r := waitsForRival(ctx, t, got, rival, rid, 300*time.Millisecond)
	n, err := s.Available(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "the one permit is taken once")
	require.NoError(t, s.Release(ctx, r.id))

	// TryAcquire.
	lc.DelayReply(scripts.ExpirableAcquire, 1)
	tried := make(chan bool, 1)
	go func() {
		_, ok := s.TryAcquire(lease)
		tried <- ok
	}()
	require.Eventually(t, func() bool { return lc.Caught() == 1 }, 5*time.Second, 5*time.Millisecond)
	time.Sleep(lease + 200*time.Millisecond)
	lc.Deliver(t)
	select {
	case ok := <-tried:
		assert.False(t, ok, "TryAcquire took a permit whose lease had ended")
	case <-time.After(10 * time.Second):
		t.Fatal("TryAcquire did not return")
	}
	require.Eventually(t, func() bool {
		n, err := s.Available(ctx)
		return err == nil && n == 1
	}, 5*time.Second, 10*time.Millisecond, "the count is whole again")
}

// A retry of an ExpirableSemaphore acquire whose first attempt took the
// permits but lost its reply finds the call's latch saying "taken". The
// permits' lease began at that first attempt: when it has run out by the
// retry, another may hold them, and the retry must not return them. The
// chaos suite saw it (sentinel run, seed 494040919): a worker cut off for
// 3 s got its permits back from a retry while two others held the
// semaphore of size 2. The retry returns them only while their lease runs
// (and then from the retry on); else the call asks anew.
func TestExpirableSemaphoreRetryAfterTheLeaseIsNoHold(t *testing.T) {
	tg := standalone
	c, lc := newLateClient(t, tg)
	other, _ := newClient(t, tg)
	name := freshName(t)
	s, rival := c.NewExpirableSemaphore(name, 1), other.NewExpirableSemaphore(name, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const lease = 500 * time.Millisecond

	id, err := s.Acquire(ctx, lease) // loads the scripts
	require.NoError(t, err)
	require.NoError(t, s.Release(ctx, id))

	// The first attempt takes the permit; its reply is lost after the
	// lease ended, and the rival took the permit meanwhile.
	lc.LoseReply(scripts.ExpirableAcquire, 1, lease+300*time.Millisecond)
	got := acquireLater(ctx, s, lease)
	require.Eventually(t, func() bool { return available(ctx, t, s) == 0 }, 5*time.Second, time.Millisecond, "the first attempt takes the permit")
	rid, err := rival.Acquire(ctx, 10*time.Second)
	require.NoError(t, err, "the expired permit is free")
	r := waitsForRival(ctx, t, got, rival, rid, time.Second)
	assert.Zero(t, available(ctx, t, s), "the one permit is taken once")
	require.NoError(t, s.Release(ctx, r.id))
	assert.EqualValues(t, 1, available(ctx, t, s))

	// A retry within the lease returns the permit, leased from the retry
	// on: it is still held a lease after the first attempt.
	lc.LoseReply(scripts.ExpirableAcquire, 1, lease/2)
	start := time.Now()
	id, err = s.Acquire(ctx, lease)
	require.NoError(t, err)
	took := time.Since(start)
	if took < lease {
		time.Sleep(lease - took + 100*time.Millisecond) // past the first attempt's lease
		assert.Zero(t, available(ctx, t, s), "the retry's permit is leased from the retry on")
	}
	require.NoError(t, s.Release(ctx, id))
	assert.EqualValues(t, 1, available(ctx, t, s))
}

// A request for more permits than one call carries is refused at once,
// before any id is made: AcquireN returns an error that names the limit,
// TryAcquireN reports false, and Redis is not asked.
func TestExpirableSemaphoreTooManyPermits(t *testing.T) {
	c, rc := newClient(t, standalone)
	name := freshName(t)
	s := c.NewExpirableSemaphore(name, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, n := range []int{redisync.MaxPermitsPerCall + 1, math.MaxInt} {
		ids, err := s.AcquireN(ctx, n, time.Minute)
		assert.ErrorContains(t, err, fmt.Sprintf("redisync: ExpirableSemaphore %q: %d permits in one call, more than MaxPermitsPerCall (%d)",
			name, n, redisync.MaxPermitsPerCall))
		assert.Nil(t, ids)
		ids, ok := s.TryAcquireN(n, time.Minute)
		assert.False(t, ok)
		assert.Nil(t, ids)
	}
	assert.Empty(t, snapshot(ctx, t, rc, name), "Redis was asked")
	ids, ok := s.TryAcquireN(redisync.MaxPermitsPerCall, time.Minute)
	assert.False(t, ok, "the most one call carries, more than are free")
	assert.Nil(t, ids)
}

// A permit named twice in one Release is given back once and counted once:
// the second naming finds it released (ErrNotHeld), and a permit whose lease
// had ended is reported so once. A repeat of such a release (its reply lost)
// answers as the first, and the count moves once.
func TestExpirableSemaphoreReleaseNamesAPermitTwice(t *testing.T) {
	c, lc := newLateClient(t, standalone)
	s := c.NewExpirableSemaphore(freshName(t), 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	free := func() int64 { return available(ctx, t, s) }

	id, err := s.Acquire(ctx, time.Minute)
	require.NoError(t, err)
	err = s.Release(ctx, id, id)
	assert.ErrorIs(t, err, redisync.ErrNotHeld)
	assert.NotErrorIs(t, err, redisync.ErrLockLost)
	assert.ErrorContains(t, err, "1 of 2 permits were not taken")
	assert.EqualValues(t, 2, free())

	id, err = s.Acquire(ctx, 50*time.Millisecond)
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond) // its lease ends
	lc.DelayReply(scripts.ExpirableRelease, 1)
	lc.DeliverAllLater(2500 * time.Millisecond) // past an attempt's 2 s budget: the release is sent again
	err = s.Release(ctx, id, id)
	assert.ErrorIs(t, err, redisync.ErrLockLost)
	assert.ErrorIs(t, err, redisync.ErrLeaseExpired)
	assert.ErrorContains(t, err, "1 of 2 permits released after their lease ended")
	assert.EqualValues(t, 2, free(), "the count moved twice")
	assert.ErrorIs(t, s.Release(ctx, id), redisync.ErrNotHeld, "a later release finds the permit given back")
	assert.EqualValues(t, 2, free())
}

// More permits than Lua's unpack carries (a few thousand) go back at once:
// the end of two calls' leases, which the next call counts back, and a
// release of two calls' permits.
func TestExpirableSemaphoreManyPermitsAtOnce(t *testing.T) {
	c, _ := newClient(t, standalone)
	s := c.NewExpirableSemaphore(freshName(t), 2*redisync.MaxPermitsPerCall)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	take := func(lease time.Duration) []string {
		var ids []string
		for range 2 {
			some, err := s.AcquireN(ctx, redisync.MaxPermitsPerCall, lease)
			require.NoError(t, err)
			ids = append(ids, some...)
		}
		return ids
	}
	// A short lease that still outlives a call: on miniredis, whose scripts
	// run in an interpreter in this process, a call of MaxPermitsPerCall
	// permits takes longer than 300 ms under -race.
	short := 300 * time.Millisecond
	if !standalone.Real() {
		short = 5 * time.Second
	}
	take(short)
	time.Sleep(short + 200*time.Millisecond) // every lease ends
	n, err := s.Available(ctx)
	assert.NoError(t, err)
	assert.EqualValues(t, 2*redisync.MaxPermitsPerCall, n, "the ended leases counted back")

	require.NoError(t, s.Release(ctx, take(time.Minute)...))
	assert.EqualValues(t, 2*redisync.MaxPermitsPerCall, available(ctx, t, s))
}

// Available counts free the permits that a call of the Client that gave up
// is still giving back: it waits for the give-back, as a later Acquire does
// (x/sync's semaphore has them back when the cancelled Acquire returns).
func TestExpirableSemaphoreAvailableWaitsForTakeBacks(t *testing.T) {
	name := "xsem:" + freshName(t)
	c, lc := newLateClient(t, standalone)
	s := c.NewExpirableSemaphore(name, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := s.Acquire(ctx, time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.Release(ctx, id)) // the count is set: 2

	lc.DelayReply(scripts.ExpirableAcquire, 1) // it takes a permit; its caller never hears
	lc.Hold(scripts.ExpirableUndo, 1)          // and the give-back waits
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	_, err = s.Acquire(short, time.Minute)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Eventually(t, func() bool { return lc.Catches(scripts.ExpirableUndo) }, hang, time.Millisecond, "no give-back")
	lc.DeliverAllLater(100 * time.Millisecond)
	assert.EqualValues(t, 2, available(ctx, t, s), "the permit being given back counted as taken")
}
