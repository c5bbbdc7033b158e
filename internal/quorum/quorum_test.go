package quorum_test

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/quorum"
	"github.com/go-redisync/redisync/internal/redisserver"
	"github.com/go-redisync/redisync/internal/redistest"
	"github.com/go-redisync/redisync/internal/scripts"
)

func TestMain(m *testing.M) { os.Exit(redistest.Run(m, func() error { return nil }, func() {})) }

// A process is one process's connections to the servers.
type process []rueidis.Client

// reconnect makes each connection whose server restarted connect again.
func (p process) reconnect() { redistest.Reconnect(p...) }

var processes sync.Map // *quorum.Quorum -> process

// restart restarts server i empty, and has the quorums' connections to it
// connect again.
func restart(t *testing.T, s *redisserver.Server, qs ...*quorum.Quorum) {
	t.Helper()
	require.NoError(t, s.Restart())
	for _, q := range qs {
		p, _ := processes.Load(q)
		p.(process).reconnect()
	}
}

// newQuorum returns a quorum over servers with its own connections (one
// process's), set up with Init.
func newQuorum(t *testing.T, servers []*redisserver.Server, cfg quorum.Config) *quorum.Quorum {
	t.Helper()
	var list []quorum.Server
	var p process
	for _, s := range servers {
		rc, err := rueidis.NewClient(redistest.Option(s.Addr))
		require.NoError(t, err)
		t.Cleanup(rc.Close)
		p = append(p, rc)
		list = append(list, quorum.Server{Name: s.Addr, RC: rc, Runner: scripts.NewRunner(rc, false)})
	}
	q, err := quorum.New(list, cfg)
	require.NoError(t, err)
	t.Cleanup(q.Close) // before the clients close
	processes.Store(q, p)
	require.NoError(t, q.Init(context.Background()))
	return q
}

var fields atomic.Int64

// field returns a hold identity no other attempt has had.
func field() string { return "test:" + strconv.FormatInt(fields.Add(1), 10) }

// Four processes' quorums contend for one lock on 3 and on 5 servers: never
// two holders at once, and the lock changes hands.
func TestQuorumExclusion(t *testing.T) {
	for _, n := range []int{3, 5} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			servers := redistest.Servers(t, n)
			k := scripts.QuorumKeysOf(layout.MutexOf(t.Name()))
			lease := 2 * time.Second
			var inside, most, grants atomic.Int64
			var wg sync.WaitGroup
			stop := time.Now().Add(2 * time.Second)
			for range 4 {
				q := newQuorum(t, servers, quorum.DefaultConfig(lease))
				for range 2 {
					wg.Go(func() {
						for time.Now().Before(stop) {
							f := field()
							res, err := q.Acquire(context.Background(), &k, scripts.Hold{Field: f}, lease)
							if err != nil || !res.Held {
								time.Sleep(time.Duration(1+fields.Load()%3) * time.Millisecond) // a split vote: back off
								continue
							}
							in := inside.Add(1)
							for m := most.Load(); in > m && !most.CompareAndSwap(m, in); m = most.Load() {
							}
							grants.Add(1)
							time.Sleep(300 * time.Microsecond)
							inside.Add(-1)
							_, err = q.Release(context.Background(), &k, scripts.Release{Field: f, From: 1, Latch: "5000"})
							assert.NoError(t, err)
						}
					})
				}
			}
			wg.Wait()
			assert.EqualValues(t, 1, most.Load(), "holders inside at once")
			assert.Positive(t, grants.Load(), "the lock changed hands")
			t.Logf("%d grants in 2 s among 8 contenders", grants.Load())
		})
	}
}

// A holder's majority is two of three servers (the third was taken by a
// stale hold); one of its two restarts empty. Without the restart rule the
// empty server and the third would give a rival a majority while the
// holder's validity runs: the rule keeps the empty server out for the bound.
func TestQuorumRestartedServerDoesNotVote(t *testing.T) {
	servers := redistest.Servers(t, 3)
	lease := 2 * time.Second
	holder, rival := newQuorum(t, servers, quorum.DefaultConfig(lease)), newQuorum(t, servers, quorum.DefaultConfig(lease))
	name := t.Name()
	k := scripts.QuorumKeysOf(layout.MutexOf(name))
	ctx := context.Background()

	third := rawClient(t, servers[2])
	require.NoError(t, third.Do(ctx, third.B().Hset().Key(name).FieldValue().FieldValue("stale:1", "1").Build()).Error())
	require.NoError(t, third.Do(ctx, third.B().Pexpire().Key(name).Milliseconds(400).Build()).Error())
	res, err := holder.Acquire(ctx, &k, scripts.Hold{Field: field()}, lease)
	require.NoError(t, err)
	require.True(t, res.Held, "two of three grant it: %+v", res.Votes)
	require.Equal(t, 2, res.Granted())

	restart(t, servers[1], holder, rival) // empty: the holder's vote there is gone
	time.Sleep(500 * time.Millisecond)    // the stale hold on the third has expired
	res, err = rival.Acquire(ctx, &k, scripts.Hold{Field: field()}, lease)
	require.NoError(t, err)
	assert.False(t, res.Held, "a rival got a majority from the empty server and the third: %+v", res.Votes)
	require.NoError(t, res.Errs[1])
	assert.True(t, res.Votes[1].Abstain, "the empty server abstains: %+v", res.Votes[1])

	// The attack the rule stops: the same server brought back as if it had
	// kept its data (a new quorum's marker) gives the rival its majority.
	r1 := rawClient(t, servers[1])
	require.NoError(t, r1.Do(ctx, r1.B().Del().Key(layout.QuorumMarker).Build()).Error())
	_, err = scripts.NewRunner(r1, false).InitQuorum(ctx)
	require.NoError(t, err)
	res, err = rival.Acquire(ctx, &k, scripts.Hold{Field: field()}, lease)
	require.NoError(t, err)
	assert.True(t, res.Held, "without the rule, the rival holds too: the test shows what the rule prevents")
}

// rawClient returns a client of one server.
func rawClient(t *testing.T, s *redisserver.Server) rueidis.Client {
	t.Helper()
	rc, err := rueidis.NewClient(redistest.Option(s.Addr))
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	return rc
}

// A hold survives the restart of one of its servers: its renewals keep a
// majority (the restarted server, which lost it, is not given it back) and
// a rival gets none.
func TestQuorumHoldSurvivesRestart(t *testing.T) {
	servers := redistest.Servers(t, 3)
	lease := time.Second
	cfg := quorum.DefaultConfig(lease)
	holder, rival := newQuorum(t, servers, cfg), newQuorum(t, servers, cfg)
	k := scripts.QuorumKeysOf(layout.MutexOf(t.Name()))
	ctx := context.Background()
	f := field()
	res, err := holder.Acquire(ctx, &k, scripts.Hold{Field: f}, lease)
	require.NoError(t, err)
	require.True(t, res.Held)
	restart(t, servers[0], holder, rival)
	deadline := time.Now().Add(cfg.Bound + 2*lease)
	for time.Now().Before(deadline) {
		_, _, renewed, err := holder.Renew(ctx, &k, f, lease)
		require.NoError(t, err)
		require.True(t, renewed, "the hold keeps a majority")
		r, err := rival.Acquire(ctx, &k, scripts.Hold{Field: field()}, lease)
		require.NoError(t, err)
		require.False(t, r.Held, "a rival got the lock: %+v", r.Votes)
		time.Sleep(lease / 4)
	}
}

// Tokens from a quorum strictly increase across grants, while one server at
// a time restarts empty between them (the next one once the last is back in
// the vote: two out at once are a majority lost); a server that lost its
// counter counts in no read until a token is written to it.
func TestQuorumTokensMonotonic(t *testing.T) {
	servers := redistest.Servers(t, 3)
	lease := time.Second
	q := newQuorum(t, servers, quorum.DefaultConfig(lease))
	k := scripts.QuorumKeysOf(layout.MutexOf(t.Name()))
	ctx := context.Background()
	last := int64(0)
	for i := range 12 {
		if i%3 == 2 {
			if i > 2 {
				time.Sleep(q.Bound()) // the server restarted last votes again
			}
			restart(t, servers[(i/3)%3], q)
		}
		f := field()
		res, err := q.Acquire(ctx, &k, scripts.Hold{Field: f}, lease)
		require.NoError(t, err)
		require.Greater(t, res.Granted(), 0, "grant %d: %+v", i, res)
		// A restarted server abstains (its marker is new), so the grant
		// may lack a majority: the read of the counters still stands.
		require.GreaterOrEqual(t, res.Counter, last, "grant %d read a counter below the last token", i)
		token, err := q.Token(ctx, &k, res.Counter, lease)
		require.NoError(t, err)
		require.Greater(t, token, last, "grant %d: tokens must increase", i)
		last = token
		if res.Held {
			_, err = q.Release(ctx, &k, scripts.Release{Field: f, From: 1, Latch: "5000"})
			require.NoError(t, err)
		}
	}
}

// Two of three servers down: an acquire fails at once with an error that
// names them.
func TestQuorumMajorityDown(t *testing.T) {
	servers := redistest.Servers(t, 3)
	lease := time.Second
	q := newQuorum(t, servers, quorum.DefaultConfig(lease))
	k := scripts.QuorumKeysOf(layout.MutexOf(t.Name()))
	require.NoError(t, servers[0].Kill())
	require.NoError(t, servers[2].Kill())
	start := time.Now()
	res, err := q.Acquire(context.Background(), &k, scripts.Hold{Field: field()}, lease)
	require.ErrorIs(t, err, quorum.ErrNoQuorum)
	assert.False(t, res.Held)
	for _, i := range []int{0, 2} {
		assert.Contains(t, err.Error(), servers[i].Addr)
	}
	assert.NotContains(t, err.Error(), servers[1].Addr)
	assert.Less(t, time.Since(start), 10*time.Second, "no hang")
}

// The lease scheduler keeps a quorum hold alive (a lease.Renewer): through
// one server's death, and reports its loss when two of three servers are
// taken by another hold.
func TestQuorumWatchdog(t *testing.T) {
	servers := redistest.Servers(t, 3)
	ttl := 600 * time.Millisecond
	q := newQuorum(t, servers, quorum.DefaultConfig(ttl))
	name := t.Name()
	k := scripts.QuorumKeysOf(layout.MutexOf(name))
	ctx := context.Background()
	f := field()
	res, err := q.Acquire(ctx, &k, scripts.Hold{Field: f}, ttl)
	require.NoError(t, err)
	require.True(t, res.Held)
	rc := rawClient(t, servers[0])
	sched := lease.New(scripts.NewRunner(rc, false), false, slog.New(slog.DiscardHandler))
	defer sched.Close()
	lost := make(chan error, 1)
	l := &lease.Lease{Key: name, TTL: ttl, Renewer: &quorum.Hold{Q: q, Keys: &k, Field: f, Lease: ttl},
		Lost: lease.ReportFunc(func(cause error) { lost <- cause })}
	sched.AddWithin(l, res.Sent, res.Validity)

	require.NoError(t, servers[2].Kill())
	select {
	case err := <-lost:
		t.Fatalf("lost with two of three servers renewing it: %v", err)
	case <-time.After(5 * ttl):
	}
	r1 := rawClient(t, servers[1])
	for _, c := range []rueidis.Client{rc, r1} {
		require.NoError(t, c.Do(ctx, c.B().Del().Key(name).Build()).Error())
		require.NoError(t, c.Do(ctx, c.B().Hset().Key(name).FieldValue().FieldValue("other:1", "1").Build()).Error())
	}
	select {
	case err := <-lost:
		require.ErrorIs(t, err, lease.ErrNotHeld)
	case <-time.After(10 * time.Second):
		t.Fatal("the loss of the majority was not reported")
	}
}

// A first acquire that falls short is undone with its field latched where
// it was granted: Result.Spent says so, a late copy of the acquire takes
// nothing there, and the servers that refused it are left alone (no latch
// written: they had nothing to give back and no copy left to come).
func TestQuorumShortAcquireIsSpent(t *testing.T) {
	servers := redistest.Servers(t, 3)
	lease := 2 * time.Second
	q := newQuorum(t, servers, quorum.DefaultConfig(lease))
	name := t.Name()
	k := scripts.QuorumKeysOf(layout.MutexOf(name))
	l := layout.MutexOf(name)
	ctx := context.Background()
	raws := []rueidis.Client{rawClient(t, servers[0]), rawClient(t, servers[1]), rawClient(t, servers[2])}
	for _, rc := range raws[1:] {
		require.NoError(t, rc.Do(ctx, rc.B().Hset().Key(name).FieldValue().FieldValue("other:1", "1").Build()).Error())
		require.NoError(t, rc.Do(ctx, rc.B().Pexpire().Key(name).Milliseconds(5000).Build()).Error())
	}
	f := field()
	res, err := q.Acquire(ctx, &k, scripts.Hold{Field: f}, lease)
	require.NoError(t, err)
	require.False(t, res.Held)
	require.Equal(t, 1, res.Granted())
	assert.True(t, res.Spent, "a first acquire not held is spent")

	// A late copy of the acquire, on the server that had granted it.
	v, err := scripts.NewRunner(raws[0], false).AcquireQuorum(ctx, &k, scripts.Hold{Field: f, LeaseMS: "2000"}, "2000")
	require.NoError(t, err)
	assert.NotEqual(t, scripts.Acquired, v.Outcome, "a late copy took the server's vote: %+v", v)
	n, err := raws[0].Do(ctx, raws[0].B().Exists().Key(name).Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n, "nothing of the spent field is left on server 0")
	for i, rc := range raws[1:] {
		latches, err := rc.Do(ctx, rc.B().Keys().Pattern(l.Latch+"*").Build()).AsStrSlice()
		require.NoError(t, err)
		assert.Empty(t, latches, "server %d refused the acquire: no undo, no latch", i+1)
	}

	// A re-entry that falls short (its hold is on server 1 only) is set
	// back, not spent.
	require.NoError(t, raws[1].Do(ctx, raws[1].B().Hset().Key(name).FieldValue().FieldValue("mine:1", "1").Build()).Error())
	res, err = q.Acquire(ctx, &k, scripts.Hold{Field: "mine:1", Count: 1}, lease)
	require.NoError(t, err)
	require.False(t, res.Held)
	assert.False(t, res.Spent, "a re-entry keeps its field")
	count, err := raws[1].Do(ctx, raws[1].B().Hget().Key(name).Field("mine:1").Build()).AsInt64()
	require.NoError(t, err)
	assert.EqualValues(t, 1, count, "the re-entry was set back")
}

// A release is lost only when more than a minority deny the hold: held on
// servers 0 and 1 (server 2 someone else's), a release that server 1 does
// not answer is neither confirmed nor denied on a majority, an error naming
// server 1; once server 1 lost the hold too, it is denied on two, a loss.
func TestQuorumReleaseOutcome(t *testing.T) {
	servers := redistest.Servers(t, 3)
	lease := 10 * time.Second
	q := newQuorum(t, servers, quorum.DefaultConfig(lease))
	ctx := context.Background()
	admin := func(s *redisserver.Server) rueidis.Client {
		rc, err := rueidis.NewClient(redistest.Option(s.Addr))
		require.NoError(t, err)
		t.Cleanup(rc.Close)
		return rc
	}
	hold := func(name string) (*scripts.QuorumKeys, string) {
		k := scripts.QuorumKeysOf(layout.MutexOf(name))
		rc := admin(servers[2])
		require.NoError(t, rc.Do(ctx, rc.B().Hset().Key(k[0]).FieldValue().FieldValue("someone:1", "1").Build()).Error())
		require.NoError(t, rc.Do(ctx, rc.B().Pexpire().Key(k[0]).Milliseconds(lease.Milliseconds()).Build()).Error())
		f := field()
		res, err := q.Acquire(ctx, &k, scripts.Hold{Field: f}, lease)
		require.NoError(t, err)
		require.True(t, res.Held, "held on servers 0 and 1: %+v", res)
		return &k, f
	}

	k, f := hold(t.Name() + ":gone")
	rc := admin(servers[1])
	require.NoError(t, rc.Do(ctx, rc.B().Del().Key(k[0]).Build()).Error())
	n, err := q.Release(ctx, k, scripts.Release{Field: f, From: 1, Latch: "5000"})
	require.NoError(t, err, "denied on servers 1 and 2: the hold was lost")
	assert.Equal(t, 1, n)

	k, f = hold(t.Name() + ":unanswered")
	require.NoError(t, servers[1].Kill())
	n, err = q.Release(ctx, k, scripts.Release{Field: f, From: 1, Latch: "5000"})
	require.Error(t, err, "confirmed on server 0, denied on server 2, server 1 unknown")
	assert.NotErrorIs(t, err, quorum.ErrNoQuorum, "two of three answered")
	assert.Contains(t, err.Error(), servers[1].Addr)
	assert.Equal(t, 1, n)
}

// A server that restarted empty is caught up from the others: each of its
// counters rises to the highest that those keeping theirs have, for locks
// it was never asked about, and a counter it does not have reads as 0 from
// then on. With two servers out at once (the second restarted before the
// first was caught up) nothing is caught up: fewer than a majority keep
// their counters, and a read of them stays refused rather than guessed.
func TestQuorumCatchUp(t *testing.T) {
	servers := redistest.Servers(t, 3)
	lease := 500 * time.Millisecond
	q := newQuorum(t, servers, quorum.DefaultConfig(lease))
	ctx := context.Background()
	p, _ := processes.Load(q)
	rcs := p.(process)
	raise := func(k *scripts.QuorumKeys, i int, v int64) {
		_, err := scripts.NewRunner(rcs[i], false).RaiseQuorumToken(ctx, k, v, "500")
		require.NoError(t, err)
	}
	get := func(i int, key string) string {
		v, err := rcs[i].Do(ctx, rcs[i].B().Get().Key(key).Build()).ToString()
		if rueidis.IsRedisNil(err) {
			return ""
		}
		require.NoError(t, err)
		return v
	}
	meet := func() { // an acquire of another lock meets every server
		_, err := q.Acquire(ctx, new(scripts.QuorumKeysOf(layout.MutexOf(t.Name()+":other"))), scripts.Hold{Field: field()}, lease)
		require.NoError(t, err)
	}
	a := scripts.QuorumKeysOf(layout.MutexOf(t.Name() + ":a"))
	b := scripts.QuorumKeysOf(layout.MutexOf(t.Name() + ":b"))
	raise(&a, 0, 5) // a's latest, 5, is on servers 0 and 1: server 2 missed it
	raise(&a, 1, 5)
	raise(&a, 2, 4)
	raise(&b, 1, 7) // b's, on 1 and 2
	raise(&b, 2, 7)

	restart(t, servers[0], q)
	meet() // the vote says server 0 is stale: it is caught up in the background
	require.Eventually(t, func() bool { return get(0, a[3]) == "5" && get(0, b[3]) == "7" }, 10*time.Second, 10*time.Millisecond,
		"server 0's counters, from the others")
	require.NoError(t, q.CatchUp(ctx, 0), "a caught-up server needs nothing")
	res, err := q.Acquire(ctx, new(scripts.QuorumKeysOf(layout.MutexOf(t.Name()+":never"))), scripts.Hold{Field: field()}, lease)
	require.NoError(t, err)
	assert.Zero(t, res.Counter, "a lock no token was issued for")

	restart(t, servers[1], q) // before 1 is caught up, 2 restarts too: two out at once
	restart(t, servers[2], q)
	meet()
	assert.ErrorIs(t, q.CatchUp(ctx, 1), quorum.ErrFewKeep)
	assert.ErrorIs(t, q.CatchUp(ctx, 2), quorum.ErrFewKeep)
	assert.Empty(t, get(1, a[3]))
	res, err = q.Acquire(ctx, &a, scripts.Hold{Field: field()}, lease)
	require.NoError(t, err)
	assert.EqualValues(t, -1, res.Counter, "a's latest is known to server 0 alone: no majority can tell it")
}
