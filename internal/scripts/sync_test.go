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

// A call with a Sync runs the script and reports WAIT's count: on a server
// without replicas, none acknowledge, and "every replica" is none.
func TestSyncWithoutReplicas(t *testing.T) {
	requireReal(t, "WAIT's timeout (its WAIT answers at once)")
	r, rc := newRunner(t)
	k := scripts.MutexKeysOf(layout.MutexOf(redistest.Name(t)))
	one := &scripts.Sync{N: 1, Timeout: 50 * time.Millisecond}
	start := time.Now()
	rep, err := r.AcquireMutex(scripts.WithSync(context.Background(), one), &k, scripts.Hold{Field: "a:1", LeaseMS: "10000"})
	require.NoError(t, err)
	assert.Equal(t, acquired, rep, "the script ran")
	assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond, "WAIT waited for its timeout")
	assert.Equal(t, int64(1), one.Wanted)
	assert.Zero(t, one.Acked)

	every := &scripts.Sync{N: -1, Timeout: time.Second}
	rep, err = r.AcquireMutex(scripts.WithSync(context.Background(), every), &k, scripts.Hold{Field: "b:1", LeaseMS: "10000"})
	require.NoError(t, err)
	assert.Equal(t, scripts.Busy, rep.Outcome)
	assert.Zero(t, every.Wanted, "no replica is connected")
	n, err := rc.Do(context.Background(), rc.B().Hlen().Key(k[0]).Build()).AsInt64()
	require.NoError(t, err)
	assert.EqualValues(t, 1, n)
}
