package scripts_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redistest"
	"github.com/go-redisync/redisync/internal/scripts"
)

// mutexQueue drives a Mutex's scripts on one name, and watches its channel.
type mutexQueue struct {
	t    *testing.T
	r    *scripts.Runner
	rc   rueidis.Client
	l    layout.Mutex
	k    scripts.MutexKeys
	msgs chan string
}

func newMutexQueue(t *testing.T) *mutexQueue {
	r, rc := newRunner(t)
	l := layout.MutexOf(redistest.Name(t))
	return &mutexQueue{t: t, r: r, rc: rc, l: l, k: scripts.MutexKeysOf(l), msgs: subscribe(t, rc, l.Channel)}
}

func (q *mutexQueue) wait(field, heartbeatMS string) scripts.Reply {
	rep, err := q.r.WaitMutex(context.Background(), &q.k, scripts.Hold{Field: field, LeaseMS: "10000", HeartbeatMS: heartbeatMS})
	require.NoError(q.t, err)
	return rep
}

func (q *mutexQueue) release(rel scripts.Release) scripts.Released {
	got, err := q.r.ReleaseMutex(context.Background(), &q.k, &rel)
	require.NoError(q.t, err)
	return got
}

// message returns the next message on the lock's channel.
func (q *mutexQueue) message() string {
	select {
	case m := <-q.msgs:
		return m
	case <-time.After(5 * time.Second):
		q.t.Fatal("no message on " + q.l.Channel)
		return ""
	}
}

func (q *mutexQueue) holder() map[string]string {
	h, err := q.rc.Do(context.Background(), q.rc.B().Hgetall().Key(q.l.Key).Build()).AsStrMap()
	require.NoError(q.t, err)
	return h
}

func (q *mutexQueue) pttl() int64 {
	n, err := q.rc.Do(context.Background(), q.rc.B().Pttl().Key(q.l.Key).Build()).AsInt64()
	require.NoError(q.t, err)
	return n
}

// newRun starts a new run of handovers, whatever the time the test took
// since the last one began (see TestMutexHandoverRuns).
func (q *mutexQueue) newRun() {
	require.NoError(q.t, q.rc.Do(context.Background(), q.rc.B().Del().Key(q.l.Run).Build()).Error())
}

func (q *mutexQueue) queued() []string {
	ids, err := q.rc.Do(context.Background(), q.rc.B().Zrange().Key(q.l.Queue).Min("0").Max("-1").Build()).AsStrSlice()
	require.NoError(q.t, err)
	return ids
}

// A waiting call queues while the lock is taken; the final release hands
// the lock to the first waiter (its field holds it, for no longer than its
// heartbeat deadline) and publishes that waiter's place number, then "0"; the
// waiter's next attempt finds its field and holds the lock with its lease.
func TestMutexWaitHandsOver(t *testing.T) {
	q := newMutexQueue(t)
	assert.Equal(t, scripts.Acquired, q.wait("a:1", "5000").Outcome, "a free lock is taken")
	b := q.wait("b:1", "5000")
	require.Equal(t, scripts.Busy, b.Outcome)
	assert.Greater(t, b.Value, int64(9000), "busy carries the holder's PTTL")
	c := q.wait("c:1", "5000")
	require.Equal(t, scripts.Busy, c.Outcome)
	assert.Greater(t, c.Place, b.Place, "places are numbered by arrival")
	assert.Equal(t, b.Place, q.wait("b:1", "5000").Place, "a repeat keeps the place")
	assert.Equal(t, []string{"b:1", "c:1"}, q.queued())

	got := q.release(scripts.Release{Field: "a:1", From: 1, Latch: "5000"})
	assert.EqualValues(t, 1, got.Status)
	assert.Equal(t, []string{strconv.FormatInt(b.Place, 10)}, got.Woken)
	assert.Equal(t, strconv.FormatInt(b.Place, 10), q.message(), "the message names the place handed the lock")
	assert.Equal(t, "0", q.message(), "then the echo that makes the waiters outside the queue look again")
	assert.Equal(t, map[string]string{"b:1": "1"}, q.holder(), "the lock is the first waiter's")
	assert.InDelta(t, 5000, q.pttl(), 1000, "until the waiter's heartbeat deadline, not for a lease")
	assert.Equal(t, []string{"c:1"}, q.queued())
	assert.Equal(t, scripts.Acquired, q.wait("b:1", "5000").Outcome, "the waiter's own attempt finds its field")
	assert.Greater(t, q.pttl(), int64(9000), "and sets the lease")
	assert.Equal(t, scripts.Refused, q.wait("a:1", "5000").Outcome, "a late copy of the released hold's acquire")

	q.newRun()
	got = q.release(scripts.Release{Field: "b:1", From: 1, Latch: "5000"})
	assert.Equal(t, []string{strconv.FormatInt(c.Place, 10)}, got.Woken)
	assert.Equal(t, strconv.FormatInt(c.Place, 10), q.message())
	assert.Equal(t, "0", q.message(), "then the echo that makes the waiters outside the queue look again")
	// c gives up: its undo takes it out of the queue and releases what was
	// handed to it, which, with nobody queued, wakes Redisson's way.
	got = q.release(scripts.Release{Field: "c:1", From: 1, Latch: "5000", Undo: true, Waiter: "c:1"})
	assert.EqualValues(t, 1, got.Status)
	assert.Empty(t, got.Woken)
	assert.Equal(t, "0", q.message(), "Redisson's unlock message when nobody is queued")
	assert.Empty(t, q.holder())
	assert.Equal(t, scripts.Refused, q.wait("c:1", "5000").Outcome, "a late copy of the call that gave up")
	assert.Empty(t, q.queued(), "and it does not queue")
}

// A waiter whose heartbeat lapsed is skipped and removed; one that gave up
// leaves the queue and a late copy of its attempt neither takes nor queues.
func TestMutexWaitSkipsDead(t *testing.T) {
	q := newMutexQueue(t)
	require.Equal(t, scripts.Acquired, q.wait("a:1", "5000").Outcome)
	require.Equal(t, scripts.Busy, q.wait("dead:1", "3").Outcome)
	require.Equal(t, scripts.Busy, q.wait("gone:1", "5000").Outcome)
	live := q.wait("live:1", "5000")
	require.Equal(t, scripts.Busy, live.Outcome)
	got := q.release(scripts.Release{Field: "gone:1", From: 1, Latch: "5000", Undo: true, Waiter: "gone:1"})
	assert.EqualValues(t, -1, got.Status, "the call that gave up held nothing")
	assert.Equal(t, scripts.Refused, q.wait("gone:1", "5000").Outcome)
	time.Sleep(10 * time.Millisecond) // dead:1's heartbeat deadline passes

	got = q.release(scripts.Release{Field: "a:1", From: 1, Latch: "5000"})
	assert.Equal(t, []string{strconv.FormatInt(live.Place, 10)}, got.Woken)
	assert.Equal(t, map[string]string{"live:1": "1"}, q.holder())
	assert.Empty(t, q.queued(), "the dead waiter was removed")
	assert.Equal(t, strconv.FormatInt(live.Place, 10), q.message())
	assert.Equal(t, "0", q.message(), "then the echo that makes the waiters outside the queue look again")

	// With nobody queued, the release only wakes: Redisson's "0".
	got = q.release(scripts.Release{Field: "live:1", From: 1, Latch: "5000"})
	assert.Empty(t, got.Woken)
	assert.Equal(t, "0", q.message())
}

// Handovers come in runs: the first release after a run of HandoverRunMS
// leaves the lock free for every waiter ("0"), though the queue has a live
// one; whoever takes it starts the next run.
func TestMutexHandoverRuns(t *testing.T) {
	q := newMutexQueue(t)
	require.Equal(t, scripts.Acquired, q.wait("a:1", "5000").Outcome)
	b, c := q.wait("b:1", "5000"), q.wait("c:1", "5000")
	got := q.release(scripts.Release{Field: "a:1", From: 1, Latch: "5000"})
	assert.Equal(t, []string{strconv.FormatInt(b.Place, 10)}, got.Woken, "a run begins")
	assert.Equal(t, strconv.FormatInt(b.Place, 10), q.message())
	assert.Equal(t, "0", q.message(), "then the echo that makes the waiters outside the queue look again")
	ms, err := strconv.Atoi(scripts.HandoverRunMS)
	require.NoError(t, err)
	time.Sleep(time.Duration(ms+5) * time.Millisecond)
	got = q.release(scripts.Release{Field: "b:1", From: 1, Latch: "5000"})
	assert.Empty(t, got.Woken, "the run is over")
	assert.Equal(t, "0", q.message())
	assert.Empty(t, q.holder(), "the lock is free for anyone")
	assert.Equal(t, []string{"c:1"}, q.queued())
	assert.Equal(t, scripts.Acquired, q.wait("x:1", "5000").Outcome, "taken by a caller from outside the queue")
	got = q.release(scripts.Release{Field: "x:1", From: 1, Latch: "5000"})
	assert.Equal(t, []string{strconv.FormatInt(c.Place, 10)}, got.Woken, "the next run begins")
	assert.Equal(t, strconv.FormatInt(c.Place, 10), q.message())
	assert.Equal(t, "0", q.message(), "then the echo that makes the waiters outside the queue look again")
	got = q.release(scripts.Release{Field: "c:1", From: 1, Latch: "5000", Run: true})
	assert.Empty(t, got.Woken)
	assert.Equal(t, "0", q.message())
	assert.Zero(t, q.runs(), "the release of a hold that came through the queue, finding nobody queued, ends the run: nothing is left behind")

	// A hold that did not come through the queue is no part of a run: its
	// release leaves the run's key alone (the client sets Run for every hold
	// that did), sparing a DEL on every uncontended release.
	require.Equal(t, scripts.Acquired, q.wait("d:1", "5000").Outcome)
	e := q.wait("e:1", "5000")
	got = q.release(scripts.Release{Field: "d:1", From: 1, Latch: "5000"})
	assert.Equal(t, []string{strconv.FormatInt(e.Place, 10)}, got.Woken, "a run begins")
	assert.Equal(t, strconv.FormatInt(e.Place, 10), q.message())
	assert.Equal(t, "0", q.message())
	got = q.release(scripts.Release{Field: "e:1", From: 1, Latch: "5000"}) // Run unset: a run's key is left behind
	assert.Empty(t, got.Woken)
	assert.Equal(t, "0", q.message())
	assert.EqualValues(t, 1, q.runs(), "left behind by a release without Run")
	ttl, err := q.rc.Do(context.Background(), q.rc.B().Pttl().Key(q.l.Run).Build()).AsInt64()
	require.NoError(t, err)
	assert.Positive(t, ttl, "a run's key always expires")
	// A queue that forms later finds that run over at its first release
	// (the lock goes free once), and the next release starts a new run.
	time.Sleep(time.Duration(ms+5) * time.Millisecond)
	require.Equal(t, scripts.Acquired, q.wait("f:1", "5000").Outcome)
	require.Equal(t, scripts.Busy, q.wait("g:1", "5000").Outcome)
	got = q.release(scripts.Release{Field: "f:1", From: 1, Latch: "5000"})
	assert.Empty(t, got.Woken, "the stale run is over: the lock goes free once")
	assert.Equal(t, "0", q.message())
	require.Equal(t, scripts.Acquired, q.wait("g:1", "5000").Outcome, "the queued call takes the free lock")
	got = q.release(scripts.Release{Field: "g:1", From: 1, Latch: "5000", Run: true})
	assert.Empty(t, got.Woken)
	assert.Equal(t, "0", q.message())
	assert.Zero(t, q.runs())
}

// runs returns whether the key of a run of handovers exists.
func (q *mutexQueue) runs() int64 {
	n, err := q.rc.Do(context.Background(), q.rc.B().Exists().Key(q.l.Run).Build()).AsInt64()
	require.NoError(q.t, err)
	return n
}

// An uncontended Mutex pair (a first acquire, its final release) costs the
// server nine commands, the two EVALSHA included: the acquire's EXISTS (of
// the lock and the field's latch), HSET and PEXPIRE; the release's HDEL, the
// latch's SET, the queue's EXISTS and PUBLISH. (It was thirteen: three
// EXISTS and an HGET where one EXISTS of two keys does, HEXISTS and DEL
// where an HDEL does, and a DEL of the handover run's key on every release.)
func TestMutexPairCommands(t *testing.T) {
	requireReal(t, "INFO commandstats")
	r, rc := newRunner(t)
	if rc.Mode() == rueidis.ClientModeCluster {
		t.Skip("counts the commands of one server")
	}
	ctx := context.Background()
	k := scripts.MutexKeysOf(layout.MutexOf(redistest.Name(t)))
	pair := func(field string) {
		rep, err := r.AcquireMutex(ctx, &k, scripts.Hold{Field: field, LeaseMS: "10000"})
		require.NoError(t, err)
		require.Equal(t, scripts.Acquired, rep.Outcome)
		rel, err := r.ReleaseMutex(ctx, &k, &scripts.Release{Field: field, From: 1, Latch: "5000"})
		require.NoError(t, err)
		require.EqualValues(t, 1, rel.Status)
	}
	pair("warm:1") // loads the scripts
	calls := func() int64 {
		info, err := rc.Do(ctx, rc.B().Info().Section("commandstats").Build()).ToString()
		require.NoError(t, err)
		var n int64
		for _, line := range strings.Split(info, "\n") {
			name, stats, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
			switch name {
			case "cmdstat_info", "cmdstat_ping", "cmdstat_hello", "cmdstat_client|setinfo", "cmdstat_client|setname":
				continue // this count's own, and rueidis's keep-alive and handshakes
			}
			if !ok {
				continue
			}
			v, err := strconv.ParseInt(stats[:strings.IndexByte(stats, ',')], 10, 64)
			require.NoError(t, err)
			n += v
		}
		return n
	}
	const pairs = 20
	before := calls()
	for i := range pairs {
		pair("p:" + strconv.Itoa(i))
	}
	per := float64(calls()-before) / pairs
	t.Logf("%.2f commands per uncontended pair", per)
	assert.LessOrEqual(t, per, 9.0)
}

// A final release deletes its own hold only: a field that someone else
// wrote into the lock stays, and the queue's first waiter is not handed a
// lock that field holds (it would be a second holder).
func TestMutexReleaseLeavesForeignField(t *testing.T) {
	q := newMutexQueue(t)
	require.Equal(t, scripts.Acquired, q.wait("a:1", "5000").Outcome)
	require.Equal(t, scripts.Busy, q.wait("b:1", "5000").Outcome)
	require.NoError(t, q.rc.Do(context.Background(), q.rc.B().Hset().Key(q.l.Key).FieldValue().FieldValue("x:9", "1").Build()).Error())
	got := q.release(scripts.Release{Field: "a:1", From: 1, Latch: "5000"})
	assert.EqualValues(t, 1, got.Status)
	assert.Empty(t, got.Woken, "nobody is handed a lock another field holds")
	assert.Equal(t, "0", q.message())
	assert.Equal(t, map[string]string{"x:9": "1"}, q.holder())
	assert.Equal(t, []string{"b:1"}, q.queued(), "the waiter keeps its place")
}
