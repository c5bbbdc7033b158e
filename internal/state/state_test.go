package state_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redisserver"
	"github.com/go-redisync/redisync/internal/redistest"
	"github.com/go-redisync/redisync/internal/state"
)

var target *redisserver.Target

func TestMain(m *testing.M) { redistest.Main(m, &target) }

func TestPTTL(t *testing.T) {
	rc, err := target.NewClient()
	require.NoError(t, err)
	defer rc.Close()
	ctx := context.Background()
	key := redistest.Name(t)
	ms, err := state.PTTL(ctx, rc, key)
	require.NoError(t, err)
	assert.Zero(t, ms, "a missing key")
	require.NoError(t, rc.Do(ctx, rc.B().Set().Key(key).Value("1").Build()).Error())
	ms, err = state.PTTL(ctx, rc, key)
	require.NoError(t, err)
	assert.EqualValues(t, -1, ms, "a key without expiry")
	require.NoError(t, rc.Do(ctx, rc.B().Pexpire().Key(key).Milliseconds(5000).Build()).Error())
	ms, err = state.PTTL(ctx, rc, key)
	require.NoError(t, err)
	assert.InDelta(t, 5000, ms, 1000)
}

// ReadSem counts only the holders whose lease runs by the server's clock.
func TestReadSem(t *testing.T) {
	rc, err := target.NewClient()
	require.NoError(t, err)
	defer rc.Close()
	ctx := context.Background()
	l := layout.SemOf(redistest.Name(t))
	st, err := state.ReadSem(ctx, rc, l)
	require.NoError(t, err)
	assert.Nil(t, st.Size)
	assert.Empty(t, st.Holders)

	now, err := state.ServerMillis(ctx, rc)
	require.NoError(t, err)
	require.NoError(t, rc.Do(ctx, rc.B().Set().Key(l.Size).Value("5").Build()).Error())
	require.NoError(t, rc.Do(ctx, rc.B().Hset().Key(l.Holders).FieldValue().
		FieldValue("a:1", "2:7").FieldValue("b:1", "1:3").FieldValue("c:1", "1:1").Build()).Error())
	require.NoError(t, rc.Do(ctx, rc.B().Zadd().Key(l.Leases).ScoreMember().
		ScoreMember(float64(now+10_000), "a:1").ScoreMember(float64(now-2_000), "b:1").Build()).Error())
	st, err = state.ReadSem(ctx, rc, l)
	require.NoError(t, err)
	require.NotNil(t, st.Size)
	assert.EqualValues(t, 5, *st.Size)
	assert.EqualValues(t, 2, st.Taken, "only a:1's lease runs")
	assert.InDelta(t, 10_000, st.TTLMillis, 1_000)
	require.Len(t, st.Holders, 3)
	assert.Equal(t, "a:1", st.Holders[0].ID, "live holders first")
	assert.True(t, st.Holders[0].Live())
	assert.False(t, st.Holders[1].Live(), "b:1 lapsed")
	assert.Negative(t, st.Holders[1].TTLMillis)
	assert.True(t, st.Holders[2].NoLease, "c:1 has no lease")

	require.NoError(t, rc.Do(ctx, rc.B().Hset().Key(l.Holders).FieldValue().FieldValue("d:1", "x").Build()).Error())
	_, err = state.ReadSem(ctx, rc, l)
	assert.ErrorContains(t, err, `holder "d:1" has "x"`, "a corrupted entry is an error, not a guess")
}

// ReadFence reads nothing as "" and 0, a record as stored, and a token that is
// not a number as an error naming the fence.
func TestReadFence(t *testing.T) {
	rc, err := target.NewClient()
	require.NoError(t, err)
	defer rc.Close()
	ctx := context.Background()
	key := redistest.Name(t)
	value, token, err := state.ReadFence(ctx, rc, key)
	require.NoError(t, err)
	assert.Empty(t, value)
	assert.Zero(t, token)
	require.NoError(t, rc.Do(ctx, rc.B().Hset().Key(key).FieldValue().FieldValue("value", "v").FieldValue("token", "7").Build()).Error())
	value, token, err = state.ReadFence(ctx, rc, key)
	require.NoError(t, err)
	assert.Equal(t, "v", value)
	assert.EqualValues(t, 7, token)
	require.NoError(t, rc.Do(ctx, rc.B().Hset().Key(key).FieldValue().FieldValue("token", "x").Build()).Error())
	_, _, err = state.ReadFence(ctx, rc, key)
	assert.ErrorContains(t, err, key)
}
