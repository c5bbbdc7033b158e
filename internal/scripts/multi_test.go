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

// A multi hold takes every lock or none, and says which lock is taken; a
// Mutex hold on one name excludes it; a retry of the winning call keeps it;
// its release frees every lock, and one that finds part of the hold lost
// frees the rest and says so, as does its repeat; a late copy of an undone
// acquire takes nothing; a renewal renews a lease whose locks are all held.
func TestMultiAcquireRelease(t *testing.T) {
	r, rc := newRunner(t)
	ctx := context.Background()
	base := redistest.Name(t)
	names := []string{"{" + base + "}a", "{" + base + "}b", "{" + base + "}c"}
	var ls []layout.Mutex
	for _, n := range names {
		ls = append(ls, layout.MutexOf(n))
	}
	all, bc := scripts.MultiKeysOf(ls), scripts.MultiKeysOf(ls[1:])
	acquire := func(k *scripts.MultiKeys, field string) scripts.Reply {
		rep, err := r.AcquireMulti(ctx, k, scripts.Hold{Field: field, LeaseMS: "10000"})
		require.NoError(t, err)
		return rep
	}
	release := func(k *scripts.MultiKeys, field string, undo bool) int64 {
		rel := scripts.Release{Field: field, From: 1, Latch: "5000", Undo: undo}
		rep, err := r.ReleaseMulti(ctx, k, &rel)
		require.NoError(t, err)
		return rep.Status
	}
	exists := func() int64 {
		n, err := rc.Do(ctx, rc.B().Exists().Key(names...).Build()).AsInt64()
		require.NoError(t, err)
		return n
	}
	mk := scripts.MutexKeysOf(ls[2])

	assert.Equal(t, acquired, acquire(&bc, "x:1"))
	busy := acquire(&all, "y:1")
	assert.Equal(t, scripts.Busy, busy.Outcome)
	assert.InDelta(t, 10000, busy.Value, 1000)
	assert.Equal(t, ls[1].Channel, busy.Channel, "wait on the channel of the name that is taken")
	assert.EqualValues(t, 2, exists(), "nothing taken")
	rep, err := r.AcquireMutex(ctx, &mk, scripts.Hold{Field: "m:1", LeaseMS: "10000"})
	require.NoError(t, err)
	assert.Equal(t, scripts.Busy, rep.Outcome, "a Mutex on one of the names is excluded")
	assert.Equal(t, acquired, acquire(&bc, "x:1"), "a retry of the same call keeps its hold")

	assert.EqualValues(t, 1, release(&bc, "x:1", false))
	assert.EqualValues(t, 0, exists())
	assert.EqualValues(t, 1, release(&bc, "x:1", false), "a repeat finds the latches")
	assert.Equal(t, acquired, acquire(&all, "y:1"))
	assert.EqualValues(t, 3, exists())

	// The hold renews while it has every lock, and not once one is gone.
	renew := func(ms string) []int64 {
		v, err := r.Exec(ctx, scripts.Call{Script: scripts.MultiRenew, Keys: append(append([]string{}, all.Locks...), ls[0].Key),
			Args: []string{"y:1", ms, "3", "z:1", ms, "1"}}).AsIntSlice()
		require.NoError(t, err)
		return v
	}
	pttl := func() int64 {
		ms, err := rc.Do(ctx, rc.B().Pttl().Key(names[0]).Build()).AsInt64()
		require.NoError(t, err)
		return ms
	}
	assert.Equal(t, []int64{1, 0}, renew("20000"), "one result per lease; z:1 holds nothing")
	assert.Greater(t, pttl(), int64(15000))
	require.NoError(t, rc.Do(ctx, rc.B().Del().Key(names[1]).Build()).Error())
	assert.Equal(t, []int64{0, 0}, renew("60000"), "the hold lost one of its locks")
	assert.LessOrEqual(t, pttl(), int64(20000), "the locks it still has are left to expire")

	assert.Nil(t, nilStatus(release(&all, "y:1", false)), "part of the hold was lost")
	assert.EqualValues(t, 0, exists(), "the locks it still had are released")
	assert.Nil(t, nilStatus(release(&all, "y:1", false)), "a repeat answers as the first")

	assert.Nil(t, nilStatus(release(&all, "u:1", true)), "the undo of an acquire that took nothing")
	assert.Equal(t, scripts.Refused, acquire(&all, "u:1").Outcome, "a late copy of the undone acquire")
	assert.EqualValues(t, 0, exists())
}
