package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/redistest"
)

// inspect --quorum shows a quorum lock's hold and the deployments that have
// it; unlock --force --quorum deletes it on every one, and its holder hears
// of the loss.
func TestInspectAndUnlockQuorum(t *testing.T) {
	var rcs []rueidis.Client
	var quorum []string
	for _, s := range redistest.Servers(t, 3) {
		rc, err := rueidis.NewClient(redistest.Option(s.Addr))
		require.NoError(t, err)
		t.Cleanup(rc.Close)
		rcs = append(rcs, rc)
		quorum = append(quorum, "--quorum", "redis://"+s.Addr)
	}
	c, err := redisync.NewQuorum(rcs, redisync.WithWatchdogTimeout(3*time.Second))
	require.NoError(t, err)
	defer c.Close()
	name := "quorum:cli"
	m := c.NewMutex(name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, m.LockContext(ctx))

	args := func(cmd ...string) []string { return append(append(cmd, quorum...), name) }
	r := runCmd(t, "", nil, args("inspect")...)
	require.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "on 3 of 3")
	assert.Contains(t, r.stdout, "; held")
	r = runCmd(t, "", nil, args("inspect", "--json")...)
	require.Equal(t, 0, r.code)
	var v struct {
		Majority int `json:"majority"`
		Holders  []struct {
			On   []string `json:"on"`
			Held bool     `json:"held"`
		} `json:"holders"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &v))
	assert.Equal(t, 2, v.Majority)
	require.Len(t, v.Holders, 1)
	assert.Len(t, v.Holders[0].On, 3)
	assert.True(t, v.Holders[0].Held)

	r = runCmd(t, "", nil, args("unlock", "--force", "--yes")...)
	require.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "unlocked")
	select {
	case <-m.Done():
		require.ErrorIs(t, m.Err(), redisync.ErrLockLost) // its renewal found the hold gone on every deployment
	case <-ctx.Done():
		t.Fatal("the holder did not hear of the force unlock")
	}
	r = runCmd(t, "", nil, args("inspect")...)
	require.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "not held on any deployment")

	r = runCmd(t, "", nil, "inspect", quorum[0], quorum[1], quorum[2], quorum[3], name)
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "odd number")
}
