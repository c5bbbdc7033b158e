package redisync_test

import (
	"context"
	"errors"
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
	"github.com/go-redisync/redisync/internal/scripts"
)

// A quorumProcess is one process's Client over a quorum, with its
// connections.
type quorumProcess struct {
	*redisync.Client
	rcs []rueidis.Client
}

// newQuorumClient returns a process's quorum Client over servers.
func newQuorumClient(t *testing.T, servers []*redisserver.Server, opts ...redisync.Option) *quorumProcess {
	t.Helper()
	p := &quorumProcess{}
	for _, s := range servers {
		rc, err := rueidis.NewClient(redistest.Option(s.Addr))
		require.NoError(t, err)
		t.Cleanup(rc.Close)
		p.rcs = append(p.rcs, rc)
	}
	c, err := redisync.NewQuorum(p.rcs, append([]redisync.Option{redisync.WithLogger(testLogger(t))}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	p.Client = c
	return p
}

// newLateQuorumClient returns a process's quorum Client over servers whose
// connection to each server is a lateClient, with those.
func newLateQuorumClient(t *testing.T, servers []*redisserver.Server, opts ...redisync.Option) (*redisync.Client, []*lateClient) {
	t.Helper()
	var lcs []*lateClient
	var rcs []rueidis.Client
	for _, s := range servers {
		rc, err := rueidis.NewClient(redistest.Option(s.Addr))
		require.NoError(t, err)
		t.Cleanup(rc.Close)
		lc := &lateClient{Client: rc}
		lcs, rcs = append(lcs, lc), append(rcs, lc)
	}
	c, err := redisync.NewQuorum(rcs, append([]redisync.Option{redisync.WithLogger(testLogger(t))}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, lc := range lcs {
			lc.DeliverAll()
		}
		_ = c.Close()
	})
	return c, lcs
}

// reconnect has p's connections to a restarted server connect again.
func (p *quorumProcess) reconnect() { redistest.Reconnect(p.rcs...) }

// Four processes' Clients over one quorum (3 and 5 servers), two goroutines
// each, lock one Mutex: never two inside, and every goroutine gets it.
func TestQuorumMutexExclusion(t *testing.T) {
	t.Parallel() // on servers of its own, mostly waiting for failovers or leases: see redistest.Parallel
	for _, n := range []int{3, 5} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			servers := redistest.Servers(t, n)
			var inside, most atomic.Int64
			var wg sync.WaitGroup
			stop := time.Now().Add(1500 * time.Millisecond)
			counts := make([]atomic.Int64, 8)
			for i := range 4 {
				c := newQuorumClient(t, servers, redisync.WithWatchdogTimeout(2*time.Second))
				m := c.NewMutex(t.Name())
				for j := range 2 {
					wg.Go(func() {
						for time.Now().Before(stop) {
							ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
							err := m.LockContext(ctx)
							cancel()
							if !assert.NoError(t, err) {
								return
							}
							in := inside.Add(1)
							for cur := most.Load(); in > cur && !most.CompareAndSwap(cur, in); cur = most.Load() {
							}
							time.Sleep(200 * time.Microsecond)
							inside.Add(-1)
							counts[2*i+j].Add(1)
							m.Unlock()
						}
					})
				}
			}
			wg.Wait()
			assert.EqualValues(t, 1, most.Load(), "holders inside at once")
			for i := range counts {
				assert.Positive(t, counts[i].Load(), "goroutine %d never got the lock", i)
			}
		})
	}
}

// One of three servers restarts empty during a hold: the hold survives
// (its renewals keep a majority, Done stays open) and no rival gets the lock
// until it is released.
func TestQuorumMutexSurvivesRestart(t *testing.T) {
	servers := redistest.Servers(t, 3)
	lease := time.Second
	holder := newQuorumClient(t, servers, redisync.WithWatchdogTimeout(lease))
	rival := newQuorumClient(t, servers, redisync.WithWatchdogTimeout(lease))
	name := t.Name()
	m, other := holder.NewMutex(name), rival.NewMutex(name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, m.LockContext(ctx))
	require.NoError(t, servers[1].Restart())
	holder.reconnect()
	rival.reconnect()
	for end := time.Now().Add(3 * lease); time.Now().Before(end); time.Sleep(lease / 5) {
		ok, err := other.TryLockContext(ctx)
		require.NoError(t, err)
		require.False(t, ok, "a rival got the lock while it was held")
		select {
		case <-m.Done():
			t.Fatalf("the hold was lost: %v", m.Err())
		default:
		}
	}
	require.NoError(t, m.UnlockContext(ctx))
	require.NoError(t, other.LockContext(ctx), "released, it goes to the rival")
	require.NoError(t, other.UnlockContext(ctx))
}

// A FencedMutex on a quorum: tokens strictly increase across holders while
// one server at a time restarts empty between grants; a holder whose
// validity ran out (a fixed lease, then a pause) writes with a token the
// fence refuses once another holder has written.
func TestQuorumFencedTokens(t *testing.T) {
	servers := redistest.Servers(t, 3)
	lease := 500 * time.Millisecond
	a := newQuorumClient(t, servers, redisync.WithWatchdogTimeout(lease))
	b := newQuorumClient(t, servers, redisync.WithWatchdogTimeout(lease))
	name := t.Name()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	last := uint64(0)
	for i := range 9 {
		if i%3 == 2 {
			require.NoError(t, servers[(i/3)%3].Restart())
			a.reconnect()
			b.reconnect()
		}
		c := a
		if i%2 == 1 {
			c = b
		}
		fm := c.NewFencedMutex(name)
		token, err := fm.LockToken(ctx)
		require.NoError(t, err, "grant %d", i)
		require.Greater(t, token, last, "grant %d: tokens must increase", i)
		last = token
		require.NoError(t, fm.UnlockContext(ctx))
		if i%3 == 2 {
			time.Sleep(lease + 100*time.Millisecond) // the restarted server votes again: the next restart leaves a majority
		}
	}

	// The paused holder: its fixed lease runs out, another takes the lock
	// and writes; the first one's write is refused.
	resource, _ := newClient(t, standalone)
	fence := resource.NewFence(name)
	paused := a.NewFencedMutex(name, redisync.WithLease(300*time.Millisecond))
	t1, err := paused.LockToken(ctx)
	require.NoError(t, err)
	time.Sleep(400 * time.Millisecond) // past its validity
	next := b.NewFencedMutex(name)
	t2, err := next.LockToken(ctx)
	require.NoError(t, err)
	require.Greater(t, t2, t1)
	require.NoError(t, fence.Set(ctx, t2, "new"))
	assert.ErrorIs(t, fence.Set(ctx, t1, "stale"), redisync.ErrStaleToken, "the paused holder's write")
	require.NoError(t, next.UnlockContext(ctx))
}

// Two of three servers down: LockContext returns, within a bound, an error
// that wraps ErrNoQuorum and names them.
func TestQuorumMajorityDown(t *testing.T) {
	servers := redistest.Servers(t, 3)
	c := newQuorumClient(t, servers, redisync.WithWatchdogTimeout(time.Second))
	m := c.NewMutex(t.Name())
	require.NoError(t, servers[0].Kill())
	require.NoError(t, servers[2].Kill())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	err := m.LockContext(ctx)
	require.ErrorIs(t, err, redisync.ErrNoQuorum)
	assert.Contains(t, err.Error(), servers[0].Addr)
	assert.Contains(t, err.Error(), servers[2].Addr)
	assert.Less(t, time.Since(start), 10*time.Second, "no retry loop without end")
	assert.False(t, errors.Is(ctx.Err(), context.DeadlineExceeded))
}

// Split votes resolve: two processes start their acquires at the same
// moment, round after round, with the three servers up and then with one
// down (each contender may then take one of the two left: a split vote,
// which both give back before trying again after a random pause). One of
// them holds each time, within a bound (the longest is logged).
func TestQuorumSplitVotesResolve(t *testing.T) {
	servers := redistest.Servers(t, 3)
	a := newQuorumClient(t, servers, redisync.WithWatchdogTimeout(2*time.Second))
	b := newQuorumClient(t, servers, redisync.WithWatchdogTimeout(2*time.Second))
	name := t.Name()
	rounds := func() time.Duration {
		var longest time.Duration
		for range 30 {
			ma, mb := a.NewMutex(name), b.NewMutex(name)
			start := make(chan struct{})
			var wg sync.WaitGroup
			var first atomic.Int64
			for _, m := range []*redisync.Mutex{ma, mb} {
				wg.Go(func() {
					<-start
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					if !assert.NoError(t, m.LockContext(ctx)) {
						return
					}
					first.CompareAndSwap(0, time.Now().UnixNano())
					m.Unlock()
				})
			}
			t0 := time.Now()
			close(start)
			wg.Wait()
			longest = max(longest, time.Unix(0, first.Load()).Sub(t0))
		}
		return longest
	}
	up := rounds()
	require.NoError(t, servers[2].Kill())
	down := rounds()
	t.Logf("the longest time to a first holder of two simultaneous contenders: %v with 3 servers up, %v with one down", up, down)
	assert.Less(t, max(up, down), 2*time.Second)
}

// A quorum Client has Mutex and FencedMutex handles only: the other
// constructors say so.
func TestQuorumOtherPrimitivesPanic(t *testing.T) {
	servers := redistest.Servers(t, 3)
	c := newQuorumClient(t, servers)
	assert.PanicsWithValue(t, "redisync: NewRWMutex is not available on a quorum Client (NewQuorum): only NewMutex and NewFencedMutex are",
		func() { c.NewRWMutex("x") })
	assert.Panics(t, func() { c.NewSemaphore("x", 2) })
	assert.Panics(t, func() { c.NewFence("x") })
	_, err := redisync.NewQuorum(nil)
	assert.ErrorContains(t, err, "odd number")
	_, err = redisync.NewQuorum(c.rcs[:2])
	assert.ErrorContains(t, err, "odd number")
}

// A handle of a quorum Client may not have a longer lease than its Client,
// on which a restarted server's time out of the vote is based, nor ask for
// replicas (a quorum's majority is of deployments): its constructor panics,
// before any use. A shorter lease is allowed.
func TestQuorumHandleOptions(t *testing.T) {
	servers := redistest.Servers(t, 3)
	c := newQuorumClient(t, servers, redisync.WithWatchdogTimeout(2*time.Second))
	longer := "redisync: a handle of a quorum Client may not have a longer lease (3s) than its Client (2s): " +
		"a restarted server stays out of the vote for the Client's"
	for name, opt := range map[string]redisync.Option{
		"WithWatchdogTimeout": redisync.WithWatchdogTimeout(3 * time.Second),
		"WithLease":           redisync.WithLease(3 * time.Second),
	} {
		assert.PanicsWithValue(t, longer, func() { c.NewMutex(t.Name(), opt) }, name)
		assert.PanicsWithValue(t, longer, func() { c.NewFencedMutex(t.Name(), opt) }, name)
	}
	replicas := "redisync: WithSyncReplicas does not apply to a quorum: its majority is of independent deployments"
	assert.PanicsWithValue(t, replicas, func() { c.NewMutex(t.Name(), redisync.WithSyncReplicas(1, time.Second)) })
	assert.PanicsWithValue(t, replicas, func() { c.NewFencedMutex(t.Name(), redisync.WithSyncReplicas(1, time.Second)) })

	m := c.NewMutex(t.Name(), redisync.WithLease(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, m.LockContext(ctx))
	m.Unlock()
}

// An attempt that fell short is undone where it was granted or not
// answered; an undo that lands late, after the same call's next attempt
// took the lock, must not take that hold away. Attempt 1 is granted by
// server 0 only (servers 1 and 2 are held by someone else for 600 ms), and
// server 1's reply to it is kept from the caller; its undo is held back on
// servers 0 and 1 and delivered once attempt 2 holds on all three; then a
// rival tries, and the holder's hold is looked for on each server. (Found by
// the chaos suite's quorum topology, F10: an undo stalled on a connection
// deleted, on two servers, the hold of the call's later attempt, which
// asked with the same field, and a rival got in beside it.)
func TestQuorumLateUndoOfAnEarlierAttempt(t *testing.T) {
	servers := redistest.Servers(t, 3)
	lease := 2 * time.Second
	holder, lcs := newLateQuorumClient(t, servers, redisync.WithWatchdogTimeout(lease))
	rival := newQuorumClient(t, servers, redisync.WithWatchdogTimeout(lease))
	name := t.Name()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, rc := range rival.rcs[1:] { // someone else holds servers 1 and 2 for 600 ms
		require.NoError(t, rc.Do(ctx, rc.B().Hset().Key(name).FieldValue().FieldValue("someone:1", "1").Build()).Error())
		require.NoError(t, rc.Do(ctx, rc.B().Pexpire().Key(name).Milliseconds(600).Build()).Error())
	}
	lcs[1].DelayReply(scripts.QuorumAcquire, 1)
	lcs[0].Hold(scripts.MutexRelease, 1) // attempt 1's undo, on servers 0 and 1
	lcs[1].Hold(scripts.MutexRelease, 1)
	m := holder.NewMutex(name)
	require.NoError(t, m.LockContext(ctx))
	require.Equal(t, 1, lcs[0].Caught(), "attempt 1 was undone on server 0")
	require.Equal(t, 2, lcs[1].Caught(), "attempt 1's reply and undo on server 1")
	lcs[0].Deliver(t) // the late undos land while attempt 2 holds
	lcs[1].Deliver(t)
	lcs[1].Deliver(t)
	ok, err := rival.NewMutex(name).TryLockContext(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "a rival got the lock while it was held")
	on := 0
	for _, rc := range rival.rcs {
		n, err := rc.Do(ctx, rc.B().Hlen().Key(name).Build()).AsInt64()
		require.NoError(t, err)
		if n > 0 {
			on++
		}
	}
	assert.GreaterOrEqual(t, on, 2, "the hold is on a majority")
	select {
	case <-m.Done():
		t.Fatalf("the hold was lost: %v", m.Err())
	default:
	}
	require.NoError(t, m.UnlockContext(ctx))
}

// A hold on two servers of three (the third is someone else's) is released
// with a deadline that passes before one of the two answers: the release is
// neither confirmed nor denied on a majority, so UnlockContext returns the
// deadline's error, not a loss, and the release is finished in the
// background. (It was reported lost: one server of three confirmed it, and
// the unanswered one counted as a denial; found as the chaos suite's losses
// away from faults, on the quorum topology.)
func TestQuorumUnansweredReleaseIsNoLoss(t *testing.T) {
	servers := redistest.Servers(t, 3)
	holder, lcs := newLateQuorumClient(t, servers)
	other := newQuorumClient(t, servers)
	name := t.Name()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc := other.rcs[2] // someone else holds server 2
	require.NoError(t, rc.Do(ctx, rc.B().Hset().Key(name).FieldValue().FieldValue("someone:1", "1").Build()).Error())
	require.NoError(t, rc.Do(ctx, rc.B().Pexpire().Key(name).Milliseconds(30_000).Build()).Error())
	m := holder.NewMutex(name)
	require.NoError(t, m.LockContext(ctx))

	lcs[1].Hold(scripts.MutexRelease, 1) // server 1 does not answer in time
	uctx, ucancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer ucancel()
	err := m.UnlockContext(uctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the release's outcome is unknown")
	assert.NotErrorIs(t, err, redisync.ErrLockLost, "nothing said the hold was gone from a majority")
	require.Equal(t, 1, lcs[1].Caught())
	lcs[1].Deliver(t) // the held call lands; the background release confirms it
	require.Eventually(t, func() bool {
		for _, rc := range other.rcs[:2] {
			if n, err := rc.Do(ctx, rc.B().Exists().Key(name).Build()).AsInt64(); err != nil || n != 0 {
				return false
			}
		}
		return true
	}, 5*time.Second, 10*time.Millisecond, "released on servers 0 and 1")
	select {
	case <-m.Done():
		assert.NotErrorIs(t, m.Err(), redisync.ErrLockLost, "the hold ended by its release")
	case <-time.After(5 * time.Second):
		t.Fatal("the hold's term did not end once the release was confirmed")
	}
}

// A plain Unlock of a quorum hold while one server answers only after the
// per-server timeout: the release derives a timeout per server from the
// context Unlock runs it under, and that timeout's timer outlives the
// release. Nothing the release used may be recycled while a child of it
// lives (a pooled context was: the timer's goroutine read it after it went
// back to the pool, a data race under -race and a nil dereference that
// crashed the process without it). The release is finished by the servers
// that answered, and the late one's copy finds nothing to take.
type lateKey struct{}

func TestQuorumUnlockWhileAServerIsLate(t *testing.T) {
	servers := redistest.Servers(t, 3)
	holder, lcs := newLateQuorumClient(t, servers, redisync.WithWatchdogTimeout(time.Second))
	other := newQuorumClient(t, servers)
	name := t.Name()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	warm := holder.NewMutex(name) // the scripts are loaded on every server: a late copy runs
	require.NoError(t, warm.LockContext(ctx))
	require.NoError(t, warm.UnlockContext(ctx))
	for round := range 5 {
		m := holder.NewMutex(name)
		require.NoError(t, m.LockContext(ctx))
		lcs[round%3].Hold(scripts.MutexRelease, 1)
		m.Unlock() // must neither crash nor race when the late server's timeout fires
		select {
		case <-m.Done():
			require.NoError(t, m.Err(), "a release confirmed by a majority is no loss")
		case <-time.After(5 * time.Second):
			t.Fatal("the hold did not end with its release")
		}
		require.Equal(t, 1, lcs[round%3].Caught())
		late := lcs[round%3].CaughtContext(t)
		select { // the context the late server's call was made with ends by its deadline
		case <-late.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the late server's call has no deadline")
		}
		// Used after the release returned, as the timer that ended it does:
		// it must still be the release's context, not a recycled one.
		assert.ErrorIs(t, late.Err(), context.DeadlineExceeded)
		assert.Nil(t, late.Value(lateKey{}))
		lcs[round%3].Deliver(t)
		rival := other.NewMutex(name)
		ok, err := rival.TryLockContext(ctx)
		require.NoError(t, err)
		require.True(t, ok, "the lock is free once released on a majority")
		require.NoError(t, rival.UnlockContext(ctx))
	}
}

// An UnlockContext whose release one server does not answer within its
// per-server timeout, which ends before the caller's context does (so the
// error is a deadline while ctx has not ended, as when rueidis's connection
// deadline fires just before the context's own timer): the release is
// finished in the background, whatever error kind reports it, and the hold
// leaves that server long before its lease ends. (It was filed as done, and
// the hold stayed on a majority for the whole lease.)
func TestQuorumReleaseUnansweredBeforeTheDeadlineIsFinished(t *testing.T) {
	servers := redistest.Servers(t, 3)
	const lease = 10 * time.Second // each server's share of a call: about 1 s
	holder, lcs := newLateQuorumClient(t, servers, redisync.WithWatchdogTimeout(lease))
	other := newQuorumClient(t, servers)
	name := t.Name() + uniqueSuffix()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc := other.rcs[2] // someone else holds server 2
	require.NoError(t, rc.Do(ctx, rc.B().Hset().Key(name).FieldValue().FieldValue("someone:1", "1").Build()).Error())
	require.NoError(t, rc.Do(ctx, rc.B().Pexpire().Key(name).Milliseconds(30_000).Build()).Error())
	m := holder.NewMutex(name)
	require.NoError(t, m.LockContext(ctx))

	lcs[1].Hold(scripts.MutexRelease, 1) // server 1's release never comes back
	uctx, ucancel := context.WithTimeout(ctx, 5*time.Second)
	defer ucancel()
	start := time.Now()
	err := m.UnlockContext(uctx)
	require.Error(t, err, "the release was not confirmed on a majority")
	assert.NoError(t, uctx.Err(), "the server's share ended first")
	assert.NotErrorIs(t, err, redisync.ErrLockLost)
	t.Logf("UnlockContext returned after %v: %v", time.Since(start), err)
	require.Eventually(t, func() bool {
		n, err := other.rcs[1].Do(ctx, other.rcs[1].B().Exists().Key(name).Build()).AsInt64()
		return err == nil && n == 0
	}, 4*time.Second, 10*time.Millisecond, "the release is finished on server 1 in the background, long before the lease ends")
	select {
	case <-m.Done():
		assert.NoError(t, m.Err(), "the hold ended by its release")
	case <-time.After(5 * time.Second):
		t.Fatal("the hold's term did not end once the release was confirmed")
	}
}

// A quorum FencedMutex stays available, and its tokens keep rising, when its
// servers restart empty one at a time, with no grant of it in between: the
// latest token (here on servers 0 and 1 only: server 2 missed its write) is
// copied to a restarted server from the others before the next one loses
// it. (Server 0 restarted, later voted again, then server 1 restarted: every
// LockToken failed for good, fewer than a majority telling their counter.
// Re-seeding from server 2 alone would have repeated a token.)
func TestQuorumFencedTokensAfterRestartsOneAtATime(t *testing.T) {
	servers := redistest.Servers(t, 3)
	const lease = 500 * time.Millisecond
	c, lcs := newLateQuorumClient(t, servers, redisync.WithWatchdogTimeout(lease))
	direct := newQuorumClient(t, servers) // reads each server, and reconnects them
	name := t.Name() + uniqueSuffix()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lockToken := func() uint64 {
		t.Helper()
		fm := c.NewFencedMutex(name)
		token, err := fm.LockToken(ctx)
		require.NoError(t, err)
		require.NoError(t, fm.UnlockContext(ctx))
		return token
	}
	counter := func(i int) string {
		rc := direct.rcs[i]
		v, err := rc.Do(ctx, rc.B().Get().Key(layout.MutexOf(name).Token).Build()).ToString()
		if rueidis.IsRedisNil(err) {
			return ""
		}
		require.NoError(t, err)
		return v
	}
	lockToken()
	lcs[2].Hold(scripts.QuorumToken, 1) // server 2 misses the next token's write
	latest := lockToken()
	require.Equal(t, strconv.FormatUint(latest, 10), counter(0))
	require.Equal(t, strconv.FormatUint(latest-1, 10), counter(2), "server 2 missed the latest")

	for _, i := range []int{0, 1} {
		require.NoError(t, servers[i].Restart())
		redistest.Reconnect(direct.rcs[i], lcs[i].Client)
		other := c.NewMutex(name + ":other") // the restarted server is met, and votes again after the bound
		require.NoError(t, other.LockContext(ctx))
		require.NoError(t, other.UnlockContext(ctx))
		require.Eventually(t, func() bool { return counter(i) == strconv.FormatUint(latest, 10) }, 10*time.Second, 10*time.Millisecond,
			"server %d's counter is brought up from the others", i)
		time.Sleep(lease + 100*time.Millisecond) // it votes again: the next restart leaves a majority
	}
	next := lockToken()
	assert.Greater(t, next, latest, "tokens must increase")
}

// A quorum whose deployments are not distinct servers is refused: one
// server's votes would count twice, and two votes of three would be one
// server's. The same client given twice is found at once; two clients of
// one server by a key each server is given, which no other may see.
func TestQuorumRefusesOneServerTwice(t *testing.T) {
	servers := redistest.Servers(t, 2)
	client := func(addr string) rueidis.Client {
		rc, err := rueidis.NewClient(redistest.Option(addr))
		require.NoError(t, err)
		t.Cleanup(rc.Close)
		return rc
	}
	a, b, alsoA := client(servers[0].Addr), client(servers[1].Addr), client(servers[0].Addr)

	_, err := redisync.NewQuorum([]rueidis.Client{a, b, a}, redisync.WithLogger(testLogger(t)))
	assert.EqualError(t, err, "redisync: quorum deployments 0 and 2 are the same rueidis client: a majority must be of distinct servers")
	_, err = redisync.NewQuorum([]rueidis.Client{a, b, alsoA}, redisync.WithLogger(testLogger(t)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "redisync: quorum deployments 0 (")
	assert.Contains(t, err.Error(), "are one server: a majority must be of distinct ones")

	third := client(redistest.Servers(t, 1)[0].Addr)
	c, err := redisync.NewQuorum([]rueidis.Client{a, b, third}, redisync.WithLogger(testLogger(t)))
	require.NoError(t, err, "three distinct servers")
	require.NoError(t, c.Close())
}

// NewQuorum works with a majority when one server hangs (SIGSTOP): the
// check that the servers are distinct waits for it a second, not the whole
// setup's budget, after which the marker check would find no majority.
func TestQuorumStartsWithOneServerHung(t *testing.T) {
	requireReal(t, standalone, "servers of its own to stop")
	servers := redistest.Servers(t, 3)
	var rcs []rueidis.Client
	for _, s := range servers {
		rc, err := rueidis.NewClient(redistest.Option(s.Addr))
		require.NoError(t, err)
		t.Cleanup(rc.Close)
		rcs = append(rcs, rc)
	}
	require.NoError(t, servers[2].Pause())
	defer func() { _ = servers[2].Resume() }()
	start := time.Now()
	c, err := redisync.NewQuorum(rcs, redisync.WithLogger(testLogger(t)))
	t.Logf("NewQuorum returned after %v", time.Since(start).Round(time.Millisecond))
	require.NoError(t, err, "a majority answers")
	require.NoError(t, servers[2].Resume())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := c.NewMutex(freshName(t))
	require.NoError(t, m.LockContext(ctx))
	require.NoError(t, m.UnlockContext(ctx))
	require.NoError(t, c.Close())
}
