package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
)

// Each name of a MultiMutex is a Mutex to the command: inspect shows its
// holder, and unlock --force of one name ends the MultiMutex's hold, which
// its renewal reports.
func TestInspectAndUnlockMultiMutexName(t *testing.T) {
	c, _ := newLibClient(t, redisync.WithWatchdogTimeout(600*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m := c.NewMultiMutex([]string{"inspect:multi:a", "inspect:multi:b"})
	require.NoError(t, m.LockContext(ctx))
	for _, name := range m.Names() {
		r := runCmd(t, "", nil, "inspect", "--redis", serverURL(), name)
		require.Equal(t, 0, r.code, r.stderr)
		require.Regexp(t, `^Mutex "`+name+`": locked, [0-9.]+m?s left\n`, r.stdout)
	}
	r := runCmd(t, "", nil, "unlock", "--force", "--yes", "--redis", serverURL(), "inspect:multi:b")
	require.Equal(t, 0, r.code, r.stderr)
	select {
	case <-m.Done():
	case <-ctx.Done():
		t.Fatal("the MultiMutex was not told")
	}
	require.ErrorIs(t, m.Err(), redisync.ErrLockLost)
	require.ErrorIs(t, m.UnlockContext(ctx), redisync.ErrLockLost)
	r = runCmd(t, "", nil, "inspect", "--redis", serverURL(), "inspect:multi:a")
	require.NotEqual(t, 0, r.code, "the other name was released")
}
