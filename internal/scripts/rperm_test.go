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
func TestRPermScripts(t *testing.T) {
	r, rc := newRunner(t)
	ctx := context.Background()
	l := layout.RPermitOf(unique(t))
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
		rep, err := r.AcquireRPerm(ctx, &l, call, "3", lease, "60000", ids)
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
	n, err := r.ReleaseRPerm(ctx, &l, []string{"go:1", "go:2"})
	require.NoError(t, err)
	assert.EqualValues(t, 2, n)
	assert.Equal(t, "2", message(t, msgs))
	n, err = r.ReleaseRPerm(ctx, &l, []string{"go:1", "go:2"})
	require.NoError(t, err)
	assert.Zero(t, n)
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
	n, err = r.ReleaseRPerm(ctx, &l, []string{"go:4", "go:5", "go:6"})
	require.NoError(t, err)
	assert.EqualValues(t, 3, n)
	assert.Equal(t, scripts.Acquired, acquire("c4", "30000", "go:7").Outcome)
	n, err = r.UndoRPerm(ctx, &l, "c4", "60000", []string{"go:7"})
	require.NoError(t, err)
	assert.EqualValues(t, 1, n)
	assert.Equal(t, scripts.Refused, acquire("c4", "30000", "go:7").Outcome, "a late copy of the undone call")
	assert.EqualValues(t, 3, free())
	n, err = r.UndoRPerm(ctx, &l, "c5", "60000", []string{"go:8"})
	require.NoError(t, err)
	assert.Zero(t, n, "an undo of a call that took nothing gives nothing")
	assert.Equal(t, scripts.Refused, acquire("c5", "30000", "go:8").Outcome)
	assert.EqualValues(t, 3, free())
}
