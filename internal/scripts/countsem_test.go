package scripts_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redistest"
	"github.com/go-redisync/redisync/internal/scripts"
)

// A CountingSemaphore's scripts on the RSemaphore count: the first use sets
// the count; a call takes its permits once however often it is repeated; a
// release adds once and publishes the count; a call that gave up gives back
// what it took, and its late copies take nothing; a Java tryAcquire shares
// the count.
func TestCountSemScripts(t *testing.T) {
	r, rc := newRunner(t)
	ctx := context.Background()
	l := layout.CountSemOf(redistest.Name(t))
	msgs := subscribe(t, rc, l.Channel)
	acquire := func(id string, n int64) scripts.Reply {
		rep, err := r.AcquireCountSem(ctx, &l, id, n, "3", "60000")
		require.NoError(t, err)
		return rep
	}
	free := func() int64 {
		n, err := rc.Do(ctx, rc.B().Get().Key(l.Key).Build()).AsInt64()
		require.NoError(t, err)
		return n
	}
	message := func() string {
		select {
		case m := <-msgs:
			return m
		case <-time.After(5 * time.Second):
			t.Fatal("no message on " + l.Channel)
			return ""
		}
	}

	assert.Equal(t, scripts.Reply{Outcome: scripts.Acquired, Value: 1}, acquire("a", 2), "the first use sets the count to the size")
	assert.Equal(t, "1", message(), "the count set is published for Java waiters")
	assert.Equal(t, scripts.Reply{Outcome: scripts.Acquired, Value: 1}, acquire("a", 2), "a repeat of the call takes nothing more")
	assert.Equal(t, scripts.Reply{Outcome: scripts.Busy, Value: 1}, acquire("b", 2))
	assert.EqualValues(t, 1, free())

	applied, n, err := r.ReleaseCountSem(ctx, &l, "rel1", 2, "5000")
	require.NoError(t, err)
	assert.True(t, applied)
	assert.EqualValues(t, 3, n)
	assert.Equal(t, "3", message(), "a release publishes the count, as Redisson's does")
	applied, n, err = r.ReleaseCountSem(ctx, &l, "rel1", 2, "5000")
	require.NoError(t, err)
	assert.False(t, applied, "a repeat of the release adds nothing")
	assert.EqualValues(t, 3, n)

	// Java takes 2 of the 3 through its own script, without latches.
	took, err := rc.Do(ctx, rc.B().Eval().Script(redistest.JavaSemTryAcquire).Numkeys(1).Key(l.Key).Arg("2").Build()).AsInt64()
	require.NoError(t, err)
	assert.EqualValues(t, 1, took)
	assert.Equal(t, scripts.Reply{Outcome: scripts.Busy, Value: 1}, acquire("c", 2))

	// A call of unknown outcome that took its permit gives it back when it
	// gives up; a late copy of it then takes nothing, and a second undo
	// gives nothing back twice.
	assert.Equal(t, scripts.Acquired, acquire("d", 1).Outcome)
	assert.EqualValues(t, 0, free())
	undone, err := r.UndoCountSem(ctx, &l, "d", 1, "60000")
	require.NoError(t, err)
	assert.True(t, undone)
	assert.Equal(t, "1", message())
	assert.Equal(t, scripts.Refused, acquire("d", 1).Outcome, "a late copy of the undone call")
	undone, err = r.UndoCountSem(ctx, &l, "d", 1, "60000")
	require.NoError(t, err)
	assert.False(t, undone)
	assert.EqualValues(t, 1, free())

	// A call that gave up before any of its attempts arrived: its late copy
	// takes nothing.
	undone, err = r.UndoCountSem(ctx, &l, "e", 1, "60000")
	require.NoError(t, err)
	assert.False(t, undone)
	assert.Equal(t, scripts.Refused, acquire("e", 1).Outcome)
	assert.EqualValues(t, 1, free())

	require.NoError(t, rc.Do(ctx, rc.B().Set().Key(l.Key).Value("x").Build()).Error())
	_, err = r.AcquireCountSem(ctx, &l, "f", 1, "3", "60000")
	assert.ErrorContains(t, err, "not an integer")
}
