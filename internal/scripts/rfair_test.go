package scripts_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redistest"
	"github.com/go-redisync/redisync/internal/scripts"
	"github.com/go-redisync/redisync/internal/state"
)

// rfair drives a FairMutex's scripts in Redisson's RFairLock layout beside a
// Java stand-in's.
type rfair struct {
	t       *testing.T
	r       *scripts.Runner
	rc      rueidis.Client
	l       layout.RFair
	publish string
}

// The heartbeat timeout and Redisson's wait of these tests (ms).
const rfairHB, rfairWait = 2000, 60000

func newRFair(t *testing.T) *rfair {
	r, rc := newRunner(t)
	f := &rfair{t: t, r: r, rc: rc, l: layout.RFairOf(redistest.Name(t)), publish: "publish"}
	if rc.Mode() == rueidis.ClientModeCluster {
		f.publish = "spublish"
	}
	return f
}

func (f *rfair) now() int64 {
	ms, err := state.ServerMillis(context.Background(), f.rc)
	require.NoError(f.t, err)
	return ms
}

// goAcquire is a Go call's attempt: hold field, waiter id ("" for TryLock).
func (f *rfair) goAcquire(field, id string) scripts.Reply {
	rep, err := f.r.AcquireRFair(context.Background(), &f.l,
		scripts.Hold{Field: field, LeaseMS: "30000", Waiter: id, HeartbeatMS: strconv.Itoa(rfairHB)}, strconv.Itoa(rfairWait), false)
	require.NoError(f.t, err)
	return rep
}

func (f *rfair) goRelease(rel scripts.Release) scripts.Released {
	rel.Latch = "5000"
	out, err := f.r.ReleaseRFair(context.Background(), &f.l, &rel, strconv.Itoa(rfairWait))
	require.NoError(f.t, err)
	return out
}

// javaLock is a Java thread's attempt at the Java clock now: nil held, else
// the lock's remaining lease.
func (f *rfair) javaLock(thread string, now int64) any {
	n, err := f.rc.Do(context.Background(), f.rc.B().Eval().Script(redistest.JavaFairTryLock).Numkeys(3).
		Key(f.l.Key, f.l.Queue, f.l.Timeouts).Arg("30000", thread, strconv.Itoa(rfairWait), strconv.FormatInt(now, 10)).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return nil
	}
	require.NoError(f.t, err)
	return n
}

func (f *rfair) javaUnlock(thread string) {
	err := f.rc.Do(context.Background(), f.rc.B().Eval().Script(redistest.JavaFairUnlock).Numkeys(4).
		Key(f.l.Key, f.l.Queue, f.l.Timeouts, f.l.Channel).Arg(thread, "30000", strconv.FormatInt(f.now(), 10), f.publish).Build()).Error()
	require.NoError(f.t, err)
}

func (f *rfair) heartbeat(id string) int64 {
	n, err := f.r.Exec(context.Background(), scripts.Call{Script: scripts.RFairHeartbeat, Keys: []string{f.l.Timeouts, f.l.Queue},
		Args: []string{id, strconv.Itoa(rfairHB), strconv.Itoa(rfairWait)}}).AsIntSlice()
	require.NoError(f.t, err)
	require.Len(f.t, n, 1)
	return n[0]
}

func (f *rfair) queue() []string {
	q, err := f.rc.Do(context.Background(), f.rc.B().Lrange().Key(f.l.Queue).Start(0).Stop(-1).Build()).AsStrSlice()
	require.NoError(f.t, err)
	return q
}

func (f *rfair) evictAt(id string) int64 {
	t, err := f.rc.Do(context.Background(), f.rc.B().Zscore().Key(f.l.Timeouts).Member(id).Build()).AsFloat64()
	require.NoError(f.t, err)
	return int64(t)
}

func (f *rfair) holders() map[string]string {
	h, err := f.rc.Do(context.Background(), f.rc.B().Hgetall().Key(f.l.Key).Build()).AsStrMap()
	require.NoError(f.t, err)
	return h
}

func message(t *testing.T, msgs chan string) string {
	t.Helper()
	select {
	case m := <-msgs:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no message")
		return ""
	}
}

// A Go waiter and Java waiters in one Redisson queue: each side's unlock
// wakes the other's head on its own channel, a free lock goes to the head
// only (a Go TryLock does not pass a queued Java waiter), and Java's
// bookkeeping of eviction times is kept.
func TestRFairScripts(t *testing.T) {
	f := newRFair(t)
	const j1, j2 = "java-uuid:1", "java-uuid:2"
	assert.Nil(t, f.javaLock(j1, f.now()), "Java takes the free lock")
	g1 := f.goAcquire("go-uuid:1", "go-uuid:w1")
	assert.Equal(t, scripts.Busy, g1.Outcome)
	assert.True(t, g1.Fresh, "the waiter joined the queue")
	assert.Greater(t, g1.Value, int64(29000), "the head waits for the lock's lease")
	assert.False(t, f.goAcquire("go-uuid:1", "go-uuid:w1").Fresh, "a repeat keeps its place")
	now := f.now()
	assert.GreaterOrEqual(t, f.evictAt("go-uuid:w1"), now+29000+rfairWait-100, "Redisson's predicted time: the lease plus a wait")
	assert.NotNil(t, f.javaLock(j2, now))
	assert.Equal(t, []string{"go-uuid:w1", j2}, f.queue())
	assert.Equal(t, f.evictAt("go-uuid:w1")+rfairWait, f.evictAt(j2), "Java queues behind the Go waiter's time")

	// Java's unlock wakes the Go head on the Go waiter's own channel.
	goMsgs := subscribe(t, f.rc, f.l.WaiterChannel("go-uuid:w1"))
	f.javaUnlock(j1)
	assert.Equal(t, "0", message(t, goMsgs))
	j2Before := f.evictAt(j2)
	assert.Equal(t, scripts.Acquired, f.goAcquire("go-uuid:1", "go-uuid:w1").Outcome)
	assert.Equal(t, []string{j2}, f.queue())
	assert.Equal(t, j2Before-rfairWait, f.evictAt(j2), "a fresh acquisition lowers the waiters' times, as Java's does")

	// Free and a Java thread queued: a Go TryLock does not take it; the Go
	// release wakes the Java head, which takes it.
	javaMsgs := subscribe(t, f.rc, f.l.WaiterChannel(j2))
	rel := f.goRelease(scripts.Release{Field: "go-uuid:1", From: 1})
	assert.Equal(t, scripts.Released{Status: 1, Woken: []string{j2}}, rel)
	assert.Equal(t, "0", message(t, javaMsgs))
	assert.Equal(t, scripts.Busy, f.goAcquire("go-uuid:2", "").Outcome, "a TryLock passed a queued Java waiter")
	assert.Nil(t, f.javaLock(j2, f.now()))
	assert.Equal(t, map[string]string{j2: "1"}, f.holders())
	assert.Empty(t, f.queue())
}

// The attacks on a Go waiter's place in Redisson's queue: Java acquisitions
// ahead of it lower its eviction time by a wait each, and a Java attempt
// evicts a head whose time has passed. A Go waiter that keeps its heartbeat
// is not evicted; one that stops is, when its time passes, as a Java
// waiter's does, and its heartbeat then says so. A Go waiter that gives up takes
// its place out, lowering those behind; a late copy of an undone acquire
// takes nothing.
func TestRFairScriptsAttacks(t *testing.T) {
	f := newRFair(t)
	const j1, j2, j3 = "java-uuid:1", "java-uuid:2", "java-uuid:3"
	require.Nil(t, f.javaLock(j1, f.now()))
	require.NotNil(t, f.javaLock(j2, f.now()))
	require.Equal(t, scripts.Busy, f.goAcquire("go-uuid:1", "go-uuid:w1").Outcome)
	now := f.now()
	assert.GreaterOrEqual(t, f.evictAt("go-uuid:w1"), now+rfairHB+rfairWait, "one wait per waiter ahead")

	// j1 leaves, j2 takes it: w1's time drops by a wait, and w1 is the head
	// of a held lock. A Java attempt now (j3) does not evict it.
	f.javaUnlock(j1)
	require.Nil(t, f.javaLock(j2, f.now()))
	require.NotNil(t, f.javaLock(j3, f.now()))
	assert.Equal(t, []string{"go-uuid:w1", j3}, f.queue(), "a live Go waiter was evicted")
	assert.EqualValues(t, 1, f.heartbeat("go-uuid:w1"))
	assert.GreaterOrEqual(t, f.evictAt("go-uuid:w1"), f.now()+rfairHB-100)

	// w1 goes silent: a Java attempt once its time has passed (the Java
	// clock moved on) evicts it, and its next heartbeat reports the loss.
	// Its time is Redisson's prediction (the lease ahead plus a wait), which
	// the heartbeat kept as it was longer.
	evict := f.evictAt("go-uuid:w1")
	assert.GreaterOrEqual(t, evict, f.now()+29000+rfairWait-100)
	assert.NotNil(t, f.javaLock(j3, evict-1))
	assert.Equal(t, []string{"go-uuid:w1", j3}, f.queue(), "evicted before its time")
	assert.NotNil(t, f.javaLock(j3, evict))
	assert.Equal(t, []string{j3}, f.queue(), "a silent Go head outlived its time")
	assert.EqualValues(t, 0, f.heartbeat("go-uuid:w1"))

	// w1 queues again, at the end; w2 behind it. w1 gives up: its place is
	// gone and w2's time is a wait sooner.
	require.Equal(t, scripts.Busy, f.goAcquire("go-uuid:1", "go-uuid:w1").Outcome)
	require.Equal(t, scripts.Busy, f.goAcquire("go-uuid:2", "go-uuid:w2").Outcome)
	assert.Equal(t, []string{j3, "go-uuid:w1", "go-uuid:w2"}, f.queue())
	w2 := f.evictAt("go-uuid:w2")
	assert.Equal(t, int64(-1), f.goRelease(scripts.Release{Field: "go-uuid:1", From: 1, Waiter: "go-uuid:w1", Undo: true}).Status)
	assert.Equal(t, []string{j3, "go-uuid:w2"}, f.queue())
	assert.Equal(t, w2-rfairWait, f.evictAt("go-uuid:w2"))

	// The undone call's late copy, at the head of a free lock, takes nothing.
	f.javaUnlock(j2)
	rc := f.rc
	require.NoError(t, rc.Do(context.Background(), rc.B().Eval().Script(redistest.JavaFairGiveUp).Numkeys(2).
		Key(f.l.Queue, f.l.Timeouts).Arg(j3, strconv.Itoa(rfairWait)).Build()).Error())
	require.NoError(t, rc.Do(context.Background(), rc.B().Eval().Script(redistest.JavaFairGiveUp).Numkeys(2).
		Key(f.l.Queue, f.l.Timeouts).Arg("go-uuid:w2", strconv.Itoa(rfairWait)).Build()).Error())
	assert.Equal(t, scripts.Refused, f.goAcquire("go-uuid:1", "").Outcome, "a late copy of an undone acquire")
	assert.Empty(t, f.holders())
	assert.Equal(t, scripts.Acquired, f.goAcquire("go-uuid:3", "").Outcome)
}
