package lease_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/redistest"
	"github.com/go-redisync/redisync/internal/scripts"
)

// A queued waiter's heartbeat keeps its deadline ahead of the server's clock
// while it is queued, and reports a lapse once its place is gone.
func TestHeartbeatKeepsPlace(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	name := redistest.Name(t)
	alive, queue := "{"+name+"}:alive", "{"+name+"}:queue"
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

// Confirmed follows the latest request that kept the place: the queueing
// request's send time, then each renewal's.
func TestHeartbeatConfirmed(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	name := redistest.Name(t)
	alive, queue := "{"+name+"}:alive", "{"+name+"}:queue"
	hb := f.sched.NewHeartbeat("w1", alive, queue, 90*time.Millisecond)
	_, ok := hb.Confirmed()
	assert.False(t, ok, "not queued yet")
	require.NoError(t, f.rc.Do(ctx, f.rc.B().Zadd().Key(queue).ScoreMember().ScoreMember(1, "w1").Build()).Error())
	// A deadline an hour away, in server milliseconds as the scripts write
	// it (a round number such as 1e15 is "1e+15" in miniredis's replies,
	// which Lua's tonumber does not read).
	deadline := float64(time.Now().Add(time.Hour).UnixMilli())
	require.NoError(t, f.rc.Do(ctx, f.rc.B().Zadd().Key(alive).ScoreMember().ScoreMember(deadline, "w1").Build()).Error())
	sent := time.Now()
	hb.Queued(sent)
	at, ok := hb.Confirmed()
	require.True(t, ok)
	assert.Equal(t, sent, at)
	assert.Eventually(t, func() bool {
		at, ok := hb.Confirmed()
		return ok && at.After(sent)
	}, 5*time.Second, 5*time.Millisecond, "a renewal confirms the place later")
	hb.Stop()
	_, ok = hb.Confirmed()
	assert.False(t, ok, "stopped")
}

// A lease added within a shorter ttl has that deadline, and is renewed in
// time to keep it.
func TestAddWithin(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	key := redistest.Name(t)
	require.NoError(t, f.rc.Do(ctx, f.rc.B().Hset().Key(key).FieldValue().FieldValue("a:1", "1").Build()).Error())
	require.NoError(t, f.rc.Do(ctx, f.rc.B().Pexpire().Key(key).Milliseconds(200).Build()).Error())
	lost := make(chan error, 1)
	l := &lease.Lease{Key: key, Keys: []string{key}, Args: []string{"a:1", "30000"}, TTL: 30 * time.Second,
		Renew: scripts.MutexRenew, Lost: lease.ReportFunc(func(cause error) { lost <- cause })}
	f.sched.AddWithin(l, time.Now(), 200*time.Millisecond)
	assert.True(t, f.sched.Current(l))
	assert.Eventually(t, func() bool {
		ttl, err := f.rc.Do(ctx, f.rc.B().Pttl().Key(key).Build()).AsInt64()
		return err == nil && ttl > 20_000
	}, 2*time.Second, 5*time.Millisecond, "renewed to the full lease before the short deadline")
	assert.True(t, f.sched.Current(l))
	assert.Empty(t, lost)
	f.sched.Remove(l)
}
