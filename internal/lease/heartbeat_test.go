package lease_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A queued waiter's heartbeat keeps its deadline ahead of the server's clock
// while it is queued, and reports a lapse once its place is gone.
func TestHeartbeatKeepsPlace(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	alive, queue := "{"+t.Name()+"}:alive", "{"+t.Name()+"}:queue"
	hb := f.sched.NewHeartbeat("w1", alive, queue, 300*time.Millisecond)
	assert.Equal(t, "300", hb.TimeoutMS)
	require.NoError(t, f.rc.Do(ctx, f.rc.B().Zadd().Key(queue).ScoreMember().ScoreMember(1, "w1").Build()).Error())
	now := func() float64 {
		t, err := f.rc.Do(ctx, f.rc.B().Time().Build()).AsIntSlice()
		if err != nil {
			panic(err)
		}
		return float64(t[0]*1000 + t[1]/1000)
	}
	require.NoError(t, f.rc.Do(ctx, f.rc.B().Zadd().Key(alive).ScoreMember().ScoreMember(now()+300, "w1").Build()).Error())
	hb.Queued(time.Now())
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(30 * time.Millisecond) {
		deadline, err := f.rc.Do(ctx, f.rc.B().Zscore().Key(alive).Member("w1").Build()).AsFloat64()
		require.NoError(t, err)
		require.Greater(t, deadline, now(), "the deadline stays ahead while the waiter is queued")
	}
	select {
	case <-hb.Lapsed:
		t.Fatal("a renewed heartbeat lapsed")
	default:
	}

	require.NoError(t, f.rc.Do(ctx, f.rc.B().Zrem().Key(alive).Member("w1").Build()).Error()) // reaped
	select {
	case <-hb.Lapsed:
	case <-time.After(5 * time.Second):
		t.Fatal("a heartbeat whose place is gone was not reported")
	}
	hb.Ended()
	hb.Queued(time.Now()) // queued anew: renewals start again
	assert.Equal(t, 1, f.sched.Len())
	hb.Stop()
	assert.Zero(t, f.sched.Len())
}
