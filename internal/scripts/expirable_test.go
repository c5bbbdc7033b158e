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

// A semaphore's scripts in Redisson's RPermitExpirableSemaphore layout beside
// a Java stand-in's: the first use sets the count; Go and Java take permits
// from one count, each permit with its id and lease; a repeat of a Go call
// takes once; each side's release publishes the count; a permit whose lease
// ended goes back to the count at the next call of either side; a call that
// gave up gives back what it took and its late copies take nothing.
func TestExpirableScripts(t *testing.T) {
	r, rc := newRunner(t)
	ctx := context.Background()
	l := layout.ExpirableSemOf(redistest.Name(t))
	msgs := subscribe(t, rc, l.Channel)
	publish := "publish"
	if rc.Mode() == rueidis.ClientModeCluster {
		publish = "spublish"
	}
	now := func() int64 {
		ms, err := state.ServerMillis(ctx, rc)
		require.NoError(t, err)
		return ms
	}
	acquire := func(call, lease string, ids ...string) scripts.Reply {
		rep, err := r.AcquireExpirable(ctx, &l, call, "3", lease, "60000", ids)
		require.NoError(t, err)
		return rep
	}
	javaTake := func(lease int64, ids ...string) string {
		args := append([]string{strconv.Itoa(len(ids)), strconv.FormatInt(now()+lease, 10), strconv.FormatInt(now(), 10), publish}, ids...)
		s, err := rc.Do(ctx, rc.B().Eval().Script(redistest.JavaPermTryAcquire).Numkeys(3).Key(l.Key, l.Leases, l.Channel).Arg(args...).Build()).ToString()
		if rueidis.IsRedisNil(err) {
			return "nil"
		}
		require.NoError(t, err)
		return s
	}
	free := func() int64 {
		n, err := rc.Do(ctx, rc.B().Get().Key(l.Key).Build()).AsInt64()
		require.NoError(t, err)
		return n
	}

	assert.Equal(t, scripts.Reply{Outcome: scripts.Acquired, Value: 1}, acquire("c1", "30000", "go:1", "go:2"), "the first use sets the count to the size")
	assert.Equal(t, "3", message(t, msgs), "the count set is published for Java waiters")
	assert.Equal(t, scripts.Reply{Outcome: scripts.Acquired, Value: 1}, acquire("c1", "30000", "go:1", "go:2"), "a repeat of the call takes nothing more")
	assert.Equal(t, "OK", javaTake(500, "java:1"), "Java takes the last one")
	busy := acquire("c2", "30000", "go:3")
	assert.Equal(t, scripts.Busy, busy.Outcome)
	assert.InDelta(t, 500, busy.Value, 100, "the wait runs to the earliest lease's end")
	assert.Equal(t, ":", javaTake(500, "java:2")[:1], "Java sees it full too")

	// Go's release frees its permits and publishes the count; a repeat gives
	// nothing back twice.
	// release passes each id as the first of its two members.
	release := func(call string, ids ...string) [2]int64 {
		var members []string
		for _, id := range ids {
			members = append(members, id, "text:"+id)
		}
		held, ended, err := r.ReleaseExpirable(ctx, &l, call, "60000", members)
		require.NoError(t, err)
		return [2]int64{held, ended}
	}
	assert.Equal(t, [2]int64{2, 0}, release("r1", "go:1", "go:2"))
	assert.Equal(t, "2", message(t, msgs))
	assert.Equal(t, [2]int64{2, 0}, release("r1", "go:1", "go:2"), "a repeat of the release answers the same")
	assert.EqualValues(t, 2, free(), "and gives nothing back twice")
	assert.Equal(t, [2]int64{0, 0}, release("r2", "go:1", "go:2"), "another release of the same permits finds them free")
	assert.EqualValues(t, 2, free())

	// Java's permit, not released, is given back when its lease has ended.
	require.Eventually(t, func() bool {
		return acquire("c3", "30000", "go:4", "go:5", "go:6").Outcome == scripts.Acquired
	}, 5*time.Second, 20*time.Millisecond, "the ended Java lease came back")
	assert.Zero(t, free())
	rel, err := rc.Do(ctx, rc.B().Eval().Script(redistest.JavaPermRelease).Numkeys(3).Key(l.Key, l.Channel, l.Leases).
		Arg("java:1", strconv.FormatInt(now(), 10), publish).Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, rel, "Java's late release of a reclaimed permit gives nothing")
	assert.Zero(t, free())

	// A Go call that gave up after an attempt of unknown outcome gives back
	// what it took; its late copy takes nothing.
	assert.Equal(t, [2]int64{3, 0}, release("r3", "go:4", "go:5", "go:6"))
	assert.Equal(t, scripts.Acquired, acquire("c4", "30000", "go:7").Outcome)
	n, err := r.UndoExpirable(ctx, &l, "c4", "60000", []string{"go:7"})
	require.NoError(t, err)
	assert.EqualValues(t, 1, n)
	assert.Equal(t, scripts.Refused, acquire("c4", "30000", "go:7").Outcome, "a late copy of the undone call")
	assert.EqualValues(t, 3, free())
	n, err = r.UndoExpirable(ctx, &l, "c5", "60000", []string{"go:8"})
	require.NoError(t, err)
	assert.Zero(t, n, "an undo of a call that took nothing gives nothing")
	assert.Equal(t, scripts.Refused, acquire("c5", "30000", "go:8").Outcome)
	assert.EqualValues(t, 3, free())

	// A permit without a lease is scored as Redisson scores one and never
	// ends; a renewal moves a lease's end, a permit's whose lease ended is
	// not renewed, and its release says the lease had ended.
	assert.Equal(t, scripts.Acquired, acquire("c6", "-1", "go:9").Outcome)
	score, err := rc.Do(ctx, rc.B().Zscore().Key(l.Leases).Member("go:9").Build()).AsFloat64()
	require.NoError(t, err)
	assert.EqualValues(t, layout.ExpirableSemNoLease, int64(score))
	assert.Equal(t, scripts.Acquired, acquire("c7", "200", "go:10").Outcome)
	ok, err := r.RenewExpirable(ctx, &l, "go:10", "-", "60000")
	require.NoError(t, err)
	assert.True(t, ok, "a running lease is renewed")
	score, err = rc.Do(ctx, rc.B().Zscore().Key(l.Leases).Member("go:10").Build()).AsFloat64()
	require.NoError(t, err)
	assert.InDelta(t, now()+60000, int64(score), 1000)
	assert.Equal(t, scripts.Acquired, acquire("c8", "1", "go:11").Outcome)
	time.Sleep(20 * time.Millisecond)
	assert.Equal(t, [2]int64{1, 1}, release("r4", "go:10", "go:11"), "one in its lease, one past it")
	assert.Equal(t, scripts.Acquired, acquire("c8b", "1", "go:13").Outcome)
	time.Sleep(20 * time.Millisecond)
	assert.Equal(t, [2]int64{0, 1}, release("r6", "go:13", "go:13"), "a permit named twice counts once")
	assert.Equal(t, [2]int64{0, 1}, release("r6", "go:13", "go:13"), "a repeat of the release answers the same")
	assert.Equal(t, scripts.Acquired, acquire("c9", "1", "go:12").Outcome)
	time.Sleep(20 * time.Millisecond)
	ok, err = r.RenewExpirable(ctx, &l, "go:12", "-", "60000")
	require.NoError(t, err)
	assert.False(t, ok, "an ended lease is not renewed")
	avail, err := r.AvailableExpirable(ctx, &l)
	require.NoError(t, err)
	assert.EqualValues(t, 2, avail, "size 3, go:9 taken without a lease")
	assert.EqualValues(t, avail, free())
	ok, err = r.RenewExpirable(ctx, &l, "-", "go:9", "60000")
	require.NoError(t, err)
	assert.True(t, ok, "renewed through its second member")
	assert.Equal(t, "OK", javaTake(60000, "text:java:4"))
	assert.Equal(t, [2]int64{1, 0}, release("r5", "java:4"), "a permit recorded as its second member is released")

	unset := layout.ExpirableSemOf(redistest.Name(t) + "-unset")
	avail, err = r.AvailableExpirable(ctx, &unset)
	require.NoError(t, err)
	assert.EqualValues(t, -1, avail, "a count never set")
}

// The first use sets the count to the size as given, as Java's
// trySetPermits does, and publishes it: exact however large. (A Lua number
// is written "1.152921504606847e+18" from 2^60, which no later call could
// count down.)
func TestExpirableSetsSizeAsGiven(t *testing.T) {
	r, rc := newRunner(t)
	ctx := context.Background()
	l := layout.ExpirableSemOf(redistest.Name(t))
	msgs := subscribe(t, rc, l.Channel)
	rep, err := r.AcquireExpirable(ctx, &l, "c1", "1152921504606846976", "-1", "60000", []string{"go:1"})
	require.NoError(t, err)
	assert.Equal(t, scripts.Acquired, rep.Outcome)
	assert.Equal(t, "1152921504606846976", message(t, msgs), "the count set, published")
	free, err := rc.Do(ctx, rc.B().Get().Key(l.Key).Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "1152921504606846975", free, "2^60 less the permit taken")
}

// A repeat of an acquire (the call did not see its earlier attempt's
// reply) returns the permits only while every lease still runs, and leases
// them anew from the repeat; once one has ended it answers gone.
func TestExpirableAcquireRepeat(t *testing.T) {
	r, rc := newRunner(t)
	ctx := context.Background()
	l := layout.ExpirableSemOf(redistest.Name(t))
	acquire := func(lease string) scripts.Reply {
		rep, err := r.AcquireExpirable(ctx, &l, "c1", "2", lease, "60000", []string{"go:1", "go:2"})
		require.NoError(t, err)
		return rep
	}
	ends := func() int64 {
		s, err := rc.Do(ctx, rc.B().Zscore().Key(l.Leases).Member("go:2").Build()).AsInt64()
		require.NoError(t, err)
		return s
	}
	now := func() int64 {
		ms, err := state.ServerMillis(ctx, rc)
		require.NoError(t, err)
		return ms
	}
	assert.Equal(t, scripts.Reply{Outcome: scripts.Acquired, Value: 0}, acquire("300"))
	time.Sleep(150 * time.Millisecond)
	assert.Equal(t, scripts.Reply{Outcome: scripts.Acquired, Value: 0}, acquire("300"), "a repeat within the leases")
	assert.InDelta(t, now()+300, ends(), 50, "leased anew from the repeat")
	time.Sleep(400 * time.Millisecond)
	assert.Equal(t, scripts.Reply{Outcome: scripts.Gone}, acquire("300"), "a repeat after a lease ended has nothing")
	assert.Equal(t, scripts.Reply{Outcome: scripts.Refused}, func() scripts.Reply {
		_, err := r.UndoExpirable(ctx, &l, "c1", "60000", []string{"go:1", "go:2"})
		require.NoError(t, err)
		return acquire("300")
	}(), "once undone, a late copy takes nothing")
}
