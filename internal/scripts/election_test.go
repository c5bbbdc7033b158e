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

// One campaigner leads at a time, with its value; a retry of the winning call
// keeps its leadership and value; only the leader's hold can proclaim, a late
// proclamation overtaken by a later one changes nothing, nor does one of an
// ended leadership; a resignation frees
// the leadership for the next; a late copy of an undone campaign takes
// nothing.
func TestElectionCampaignProclaim(t *testing.T) {
	r, rc := newRunner(t)
	ctx := context.Background()
	k := scripts.ElectionKeysOf(layout.ElectionOf(redistest.Name(t)))
	key := k[0]
	campaign := func(field, value string) scripts.Reply {
		rep, err := r.Campaign(ctx, &k, scripts.Hold{Field: field, LeaseMS: "10000"}, value)
		require.NoError(t, err)
		return rep
	}
	proclaim := func(field, value string, n int64) int64 {
		rev, err := r.Proclaim(ctx, &k, field, value, n)
		require.NoError(t, err)
		return rev
	}
	leadership := func() layout.Leadership {
		m, err := rc.Do(ctx, rc.B().Hgetall().Key(key).Build()).AsStrMap()
		require.NoError(t, err)
		return layout.ParseLeadership(m)
	}
	resign := func(field string, undo bool) int64 {
		rel := scripts.Release{Field: field, From: 1, Latch: "5000", Undo: undo}
		rep, err := r.Resign(ctx, &k, &rel)
		require.NoError(t, err)
		return rep.Status
	}

	assert.Equal(t, acquired, campaign("a:1", "alpha"))
	assert.Equal(t, layout.Leadership{Field: "a:1", Value: "alpha", Rev: "1"}, leadership())
	busy := campaign("b:1", "beta")
	assert.Equal(t, scripts.Busy, busy.Outcome)
	assert.InDelta(t, 10000, busy.Value, 1000)
	assert.Equal(t, acquired, campaign("a:1", "other"), "a retry of the winning call")
	assert.Equal(t, "alpha", leadership().Value, "a retry keeps the value it won with")

	assert.EqualValues(t, 0, proclaim("b:1", "beta", 2), "not the leader")
	assert.EqualValues(t, 1, proclaim("a:1", "alpha-3", 3))
	assert.Equal(t, layout.Leadership{Field: "a:1", Value: "alpha-3", Rev: "3"}, leadership())
	assert.EqualValues(t, 1, proclaim("a:1", "alpha-3", 3), "a repeat")
	assert.EqualValues(t, -1, proclaim("a:1", "alpha-2", 2), "a late proclamation overtaken by a later one")
	assert.Equal(t, layout.Leadership{Field: "a:1", Value: "alpha-3", Rev: "3"}, leadership())

	assert.EqualValues(t, 1, resign("a:1", false))
	assert.Equal(t, layout.Leadership{}, leadership(), "no leader, no value")
	assert.EqualValues(t, 1, resign("a:1", false), "a repeat finds the latch")
	assert.EqualValues(t, 0, proclaim("a:1", "late", 9), "a late proclamation of the ended leadership")
	assert.Equal(t, layout.Leadership{}, leadership())

	assert.Equal(t, acquired, campaign("b:1", "beta"), "the next campaigner leads")
	assert.EqualValues(t, 0, proclaim("a:1", "late", 9), "an earlier leader's late proclamation")
	assert.Equal(t, layout.Leadership{Field: "b:1", Value: "beta", Rev: "1"}, leadership())
	assert.EqualValues(t, 1, resign("b:1", false))

	assert.Nil(t, nilStatus(resign("x:1", true)), "the undo of a campaign that never won")
	assert.Equal(t, scripts.Refused, campaign("x:1", "late").Outcome, "a late copy of the undone campaign")
	assert.Equal(t, layout.Leadership{}, leadership())

	// The leadership has a Mutex hash's shape: mutex_renew renews it.
	assert.Equal(t, acquired, campaign("c:1", "gamma"))
	renewed, err := r.Exec(ctx, scripts.Call{Script: scripts.MutexRenew, Keys: []string{key},
		Args: []string{"c:1", "60000"}}).AsIntSlice()
	require.NoError(t, err)
	assert.Equal(t, []int64{1}, renewed)
	pttl, err := rc.Do(ctx, rc.B().Pttl().Key(key).Build()).AsInt64()
	require.NoError(t, err)
	assert.Greater(t, pttl, int64(50000))
}
