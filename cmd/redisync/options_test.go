package main

import (
	"context"
	"io"
	"log/slog"
	"regexp"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/redisserver"
)

// bench --sync-replicas: every connected replica (none here) is no wait; one
// replica, which a standalone server lacks, fails every acquisition, and the
// error says why.
func TestBenchSyncReplicas(t *testing.T) {
	r := runCmd(t, "", nil, "bench", "--redis", serverURL(), "--ops", "20", "--concurrency", "2", "--sync-replicas", "-1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^ *uncontended, serial +1 +1 +\d+ `, r.stdout)
	r = runCmd(t, "", nil, "bench", "--redis", serverURL(), "--ops", "2", "--concurrency", "1", "--sync-replicas", "1")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "not acknowledged by enough replicas: 0 of 1")
}

// watch --classic-pubsub on a cluster shows the releases of locks that
// publish classically (WithShardedPubSub(false)), with a pattern.
func TestWatchClassicPubSubOnCluster(t *testing.T) {
	cl, err := redisserver.StartCluster(3)
	if err != nil {
		if !redisserver.RequireServer() {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Stop() })
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: cl.Addrs[:1], DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	c, err := redisync.New(rc, redisync.WithShardedPubSub(false), redisync.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, lines, stderr := startWatch(t, "--redis", "redis://"+cl.Addrs[0], "--cluster", "--classic-pubsub", "--duration", "30s", "classic:*")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// The locks are taken and released again every half second until the
	// watch has shown each release: a new cluster's bus may still be linking
	// its nodes, and a PUBLISH reaches the watch's node through it (one
	// release in three went unseen for 30 s once).
	stop := make(chan struct{})
	released := make(chan struct{})
	defer func() { close(stop); <-released }()
	go func() {
		defer close(released)
		for {
			for _, name := range []string{"classic:a", "classic:b", "classic:c"} { // in different slots
				m := c.NewMutex(name)
				if m.LockContext(ctx) == nil {
					_ = m.UnlockContext(ctx)
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	want := regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3}  release  classic:[abc]$`)
	seen := map[string]bool{}
	for len(seen) < 3 && lines.Scan() {
		if want.MatchString(lines.Text()) {
			seen[lines.Text()[len(lines.Text())-1:]] = true
		}
	}
	require.Len(t, seen, 3, "stderr %s", stderr.String())
}
