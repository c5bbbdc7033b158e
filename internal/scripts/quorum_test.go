package scripts_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redistest"
	"github.com/go-redisync/redisync/internal/scripts"
)

// One server's side of a quorum lock: a server found without its marker
// (it restarted empty) abstains for the bound and cannot tell its token
// counter until a token is written to it; a new quorum's server votes at
// once; a vote is the Mutex's acquire (identity, compare-and-set count,
// latch); the counter only rises; a renewal adds a voting server where the
// lock is free and the hold was never released.
func TestQuorumScripts(t *testing.T) {
	r, rc := newRunner(t)
	if rc.Mode() == rueidis.ClientModeCluster {
		t.Skip("a quorum's servers are standalone deployments, not a cluster's shards")
	}
	ctx := context.Background()
	k := scripts.QuorumKeysOf(layout.MutexOf(redistest.Name(t)))
	lock, token := k[0], k[3]
	const bound = "300" // ms a restarted server stays out
	del := func(keys ...string) {
		require.NoError(t, rc.Do(ctx, rc.B().Del().Key(keys...).Build()).Error())
	}
	vote := func(field string, count int) scripts.Vote {
		v, err := r.AcquireQuorum(ctx, &k, scripts.Hold{Field: field, Count: count, LeaseMS: "10000"}, bound)
		require.NoError(t, err)
		return v
	}
	renew := func(field string) bool {
		ok, err := r.RenewQuorum(ctx, &k, field, "10000")
		require.NoError(t, err)
		return ok
	}
	raise := func(v int64) int64 {
		n, err := r.RaiseQuorumToken(ctx, &k, v, bound)
		require.NoError(t, err)
		return n
	}
	t.Cleanup(func() { del(layout.QuorumMarker) })

	// An empty server: it abstains for the bound, and its counter is unknown.
	del(layout.QuorumMarker)
	v := vote("a", 0)
	require.True(t, v.Abstain, "a server found without its marker restarted: %+v", v)
	assert.InDelta(t, 300, v.Value, 50, "it votes after the bound")
	assert.EqualValues(t, -1, v.Counter, "it cannot tell the counter it lost")
	assert.False(t, renew("a"), "nor renewed there")
	n, err := rc.Do(ctx, rc.B().Exists().Key(lock).Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n, "an abstaining server records no hold")
	assert.EqualValues(t, 7, raise(7), "a token written to it makes its counter known")
	assert.EqualValues(t, 7, vote("a", 0).Counter)
	ok, err := r.InitQuorum(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "a restarted server's marker is not a new quorum's")
	time.Sleep(350 * time.Millisecond)
	v = vote("a", 0)
	assert.Equal(t, scripts.Vote{Reply: scripts.Reply{Outcome: scripts.Acquired}, Counter: 7, Stale: true}, v,
		"it votes once the bound has passed, its other counters unknown until it is caught up")

	// A catch-up raises its counters from the others', and the last batch
	// marks it caught up: a counter it does not have is then 0. A catch-up
	// begun on another marker (the server restarted again) changes nothing.
	from, err := rc.Do(ctx, rc.B().Hget().Key(layout.QuorumMarker).Field("from").Build()).ToString()
	require.NoError(t, err)
	other := scripts.QuorumKeysOf(layout.MutexOf(redistest.Name(t) + ":other"))
	catchUp := func(from string, values []string, last bool) bool {
		ok, err := r.CatchUpQuorum(ctx, from, []string{token, other[3]}, values, last)
		require.NoError(t, err)
		return ok
	}
	assert.False(t, catchUp("1", []string{"9", "4"}, true), "another marker's catch-up")
	assert.True(t, catchUp(from, []string{"9", "4"}, false))
	assert.EqualValues(t, 9, vote("a", 1).Counter, "raised to the others'")
	assert.True(t, vote("a", 2).Stale, "not caught up before the last batch")
	assert.True(t, catchUp(from, []string{"8", "4"}, true))
	v = vote("a", 3)
	assert.EqualValues(t, 9, v.Counter, "a catch-up lowers nothing")
	assert.False(t, v.Stale, "caught up")
	assert.False(t, catchUp(from, []string{"10", "4"}, true), "a server caught up is not caught up again")
	del(token, other[3])
	assert.Zero(t, vote("a", 4).Counter, "a counter a caught-up server does not have is one never issued")

	// A new quorum's server votes at once, with a counter of 0.
	del(layout.QuorumMarker, lock, token)
	ok, err = r.InitQuorum(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, scripts.Vote{Reply: scripts.Reply{Outcome: scripts.Acquired}}, vote("a", 0))
	assert.Equal(t, scripts.Acquired, vote("a", 0).Outcome, "a repeat of the call's acquire adopts its hold")
	v = vote("b", 0)
	assert.Equal(t, scripts.Busy, v.Outcome)
	assert.False(t, v.Abstain)
	assert.InDelta(t, 10000, v.Value, 100, "another's vote waits for the lease")
	assert.Equal(t, scripts.Acquired, vote("a", 1).Outcome, "a re-entry")
	count, err := rc.Do(ctx, rc.B().Hget().Key(lock).Field("a").Build()).AsInt64()
	require.NoError(t, err)
	assert.EqualValues(t, 2, count)
	assert.Equal(t, scripts.Gone, vote("b", 1).Outcome, "a re-entry of a hold that is not here")

	// The counter only rises.
	assert.EqualValues(t, 5, raise(5))
	assert.EqualValues(t, 5, raise(3), "a late write lowers nothing")
	assert.EqualValues(t, 5, vote("a", 2).Counter, "the acquire reads the counter")

	// The release, as a Mutex's; its latch refuses a late copy of the
	// acquire, and a renewal of the released hold finds nothing.
	rel, err := r.ReleaseQuorum(ctx, &k, &scripts.Release{Field: "a", From: 3, To: 0, Latch: "5000"})
	require.NoError(t, err)
	assert.EqualValues(t, 1, rel.Status)
	assert.Equal(t, scripts.Refused, vote("a", 0).Outcome, "a late copy of the released hold's acquire")
	assert.False(t, renew("a"), "a released hold is not renewed back")

	// A quorum's undo of an attempt that fell short leaves no latch: the
	// call's next attempt takes the field again.
	assert.Equal(t, scripts.Acquired, vote("e", 0).Outcome)
	rel, err = r.ReleaseQuorum(ctx, &k, &scripts.Release{Field: "e", From: 1})
	require.NoError(t, err)
	assert.EqualValues(t, 1, rel.Status)
	assert.Equal(t, scripts.Acquired, vote("e", 0).Outcome, "no latch refuses the retry")
	_, err = r.ReleaseQuorum(ctx, &k, &scripts.Release{Field: "e", From: 1, Latch: "5000"})
	require.NoError(t, err)

	// A renewal extends a hold that is there, and adds none where the lock
	// is free: a holder that lost its hold there must hear of it.
	assert.Equal(t, scripts.Acquired, vote("c", 0).Outcome)
	assert.True(t, renew("c"))
	assert.False(t, renew("d"), "not where another holds the lock")
	_, err = r.ReleaseQuorum(ctx, &k, &scripts.Release{Field: "c", From: 1, Latch: "5000"})
	require.NoError(t, err)
	del(k[2] + ":c")
	assert.False(t, renew("c"), "nor where the lock is free")
}
