package scripts_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redistest"
	"github.com/go-redisync/redisync/internal/scripts"
)

// Each typed call sends its script the KEYS and ARGV its header states, and
// decodes each kind of reply.
func TestFencedAcquireDecodes(t *testing.T) {
	r, _ := newRunner(t)
	ctx := context.Background()
	name := redistest.Name(t)
	k := scripts.MutexKeysOf(layout.MutexOf(name))
	a, err := r.AcquireFenced(ctx, &k, scripts.Hold{Field: "a:1", LeaseMS: "10000"})
	require.NoError(t, err)
	assert.Equal(t, scripts.Acquired, a.Outcome)
	assert.Positive(t, a.Value, "a first acquire is granted a token")
	b, err := r.AcquireFenced(ctx, &k, scripts.Hold{Field: "b:1", LeaseMS: "10000"})
	require.NoError(t, err)
	assert.Equal(t, scripts.Busy, b.Outcome)
	assert.Greater(t, b.Value, int64(9000), "busy carries the holder's PTTL")
	rel := scripts.Release{Field: "a:1", From: 1, Latch: "5000"}
	got, err := r.ReleaseMutex(ctx, &k, &rel)
	require.NoError(t, err)
	assert.EqualValues(t, 1, got.Status)
	late, err := r.AcquireFenced(ctx, &k, scripts.Hold{Field: "a:1", LeaseMS: "10000"})
	require.NoError(t, err)
	assert.Equal(t, scripts.Refused, late.Outcome)
	gone, err := r.AcquireFenced(ctx, &k, scripts.Hold{Field: "c:1", Count: 1, LeaseMS: "10000"})
	require.NoError(t, err)
	assert.Equal(t, scripts.Gone, gone.Outcome)
	again, err := r.AcquireFenced(ctx, &k, scripts.Hold{Field: "b:1", LeaseMS: "10000"})
	require.NoError(t, err)
	assert.Equal(t, scripts.Acquired, again.Outcome)
	assert.Greater(t, again.Value, a.Value, "tokens increase")

	fence := layout.MutexOf(name).Fence
	stored, seen, err := r.SetFence(ctx, fence, uint64(again.Value), "v")
	require.NoError(t, err)
	assert.True(t, stored)
	assert.EqualValues(t, again.Value, seen)
	stored, seen, err = r.SetFence(ctx, fence, uint64(a.Value), "stale")
	require.NoError(t, err)
	assert.False(t, stored, "a lower token is rejected")
	assert.EqualValues(t, again.Value, seen)

	fields, err := r.ForceUnlockMutex(ctx, k[0], k[1], "0")
	require.NoError(t, err)
	assert.Equal(t, []string{"b:1"}, fields)
}

func TestRWCallsDecode(t *testing.T) {
	r, rc := newRunner(t)
	ctx := context.Background()
	l := layout.RWOf(redistest.Name(t))
	read, err := r.AcquireRead(ctx, &l, scripts.Hold{Field: "a:1", LeaseMS: "10000"}, "", false)
	require.NoError(t, err)
	assert.Equal(t, scripts.Acquired, read.Outcome)
	w, err := r.AcquireWrite(ctx, &l, scripts.Hold{Field: "b:1:write", LeaseMS: "10000"}, "3000", true)
	require.NoError(t, err)
	assert.Equal(t, scripts.Busy, w.Outcome)
	claims, _ := rc.Do(ctx, rc.B().Zcard().Key(l.Writers).Build()).AsInt64()
	assert.EqualValues(t, 1, claims, "a writer that will wait claims its turn")
	require.NoError(t, r.LeaveWriters(ctx, &l, "b:1:write"))
	claims, _ = rc.Do(ctx, rc.B().Zcard().Key(l.Writers).Build()).AsInt64()
	assert.Zero(t, claims)

	rel := scripts.Release{Field: "a:1", From: 1, Latch: "5000"}
	got, err := r.ReleaseRead(ctx, &l, &rel, new(scripts.Readers))
	require.NoError(t, err)
	assert.EqualValues(t, 1, got.Status)
	w, err = r.AcquireWrite(ctx, &l, scripts.Hold{Field: "b:1:write", LeaseMS: "10000"}, "3000", false)
	require.NoError(t, err)
	assert.Equal(t, scripts.Acquired, w.Outcome)
	rel = scripts.Release{Field: "b:1:write", From: 1, Latch: "5000"}
	got, err = r.ReleaseWrite(ctx, &l, &rel)
	require.NoError(t, err)
	assert.EqualValues(t, 1, got.Status)
	got, err = r.ReleaseWrite(ctx, &l, &rel)
	require.NoError(t, err)
	assert.EqualValues(t, 1, got.Status, "a repeated release answers as the first")
}

func TestQueueCallsDecode(t *testing.T) {
	r, _ := newRunner(t)
	ctx := context.Background()
	f := layout.FairOf(redistest.Name(t))
	a, err := r.AcquireFair(ctx, &f, scripts.Hold{Field: "a:1", LeaseMS: "10000"}, false)
	require.NoError(t, err)
	assert.Equal(t, scripts.Acquired, a.Outcome)
	b, err := r.AcquireFair(ctx, &f, scripts.Hold{Field: "b:1", LeaseMS: "10000", Waiter: "b:w1", HeartbeatMS: "5000"}, false)
	require.NoError(t, err)
	assert.Equal(t, scripts.Busy, b.Outcome, "a waiter queues")
	assert.True(t, b.Fresh, "it joined the queue")
	b, err = r.AcquireFair(ctx, &f, scripts.Hold{Field: "b:1", LeaseMS: "10000", Waiter: "b:w1", HeartbeatMS: "5000"}, false)
	require.NoError(t, err)
	assert.False(t, b.Fresh, "a repeat keeps its place")
	rel := scripts.Release{Field: "a:1", From: 1, Latch: "5000"}
	got, err := r.ReleaseFair(ctx, &f, &rel)
	require.NoError(t, err)
	assert.Equal(t, scripts.Released{Status: 1, Woken: []string{"b:w1"}}, got, "the release wakes the head of the queue")
	fields, err := r.ForceUnlockFair(ctx, &f)
	require.NoError(t, err)
	assert.Empty(t, fields)

	s := layout.SemOf(redistest.Name(t))
	one, err := r.AcquireSem(ctx, &s, "1", scripts.Hold{Field: "a:1", LeaseMS: "10000"}, 1, scripts.SemVersion{Write: 1})
	require.NoError(t, err)
	assert.Equal(t, scripts.Acquired, one.Outcome)
	two, err := r.AcquireSem(ctx, &s, "1", scripts.Hold{Field: "b:1", LeaseMS: "10000", Waiter: "b:w2", HeartbeatMS: "5000"}, 1, scripts.SemVersion{Write: 2})
	require.NoError(t, err)
	assert.Equal(t, scripts.Busy, two.Outcome)
	assert.True(t, two.Fresh)
	two, err = r.AcquireSem(ctx, &s, "1", scripts.Hold{Field: "b:1", LeaseMS: "10000", Waiter: "b:w2", HeartbeatMS: "5000"}, 1, scripts.SemVersion{Write: 2})
	require.NoError(t, err)
	assert.False(t, two.Fresh, "a repeat keeps its place")
	other, err := r.AcquireSem(ctx, &s, "2", scripts.Hold{Field: "c:1", LeaseMS: "10000"}, 1, scripts.SemVersion{Write: 3})
	require.NoError(t, err)
	assert.Equal(t, scripts.Reply{Outcome: scripts.Mismatch, Value: 1}, other, "a handle of another size learns the recorded one")
	rel = scripts.Release{Field: "a:1", From: 1}
	got, err = r.ReleaseSem(ctx, &s, &rel, scripts.SemVersion{Expect: 1, Write: 4})
	require.NoError(t, err)
	assert.Equal(t, scripts.Released{Status: 1, Woken: []string{"b:w2"}}, got)
	stale, err := r.ReleaseSem(ctx, &s, &scripts.Release{Field: "b:1", To: 1}, scripts.SemVersion{Expect: 9, Write: 5})
	require.NoError(t, err)
	assert.EqualValues(t, -1, stale.Status, "a holder with no permits has none to keep")
}
