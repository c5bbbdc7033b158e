package main

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
)

// inspect shows an Election's leader and its value; unlock --force ends the
// leadership, which the leader's handle reports as lost.
func TestInspectAndUnlockElection(t *testing.T) {
	c, _ := newLibClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const name = "inspect:election"
	e := c.NewElection(name)
	require.NoError(t, e.Campaign(ctx, "10.0.0.7:8080"))
	require.NoError(t, e.Proclaim(ctx, "10.0.0.7:9090"))

	r := runCmd(t, "", nil, "inspect", "--redis", serverURL(), name)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^Election "inspect:election": led, value "10.0.0.7:9090" \(proclamation 2\), leadership [0-9.]+s left\n`, r.stdout)
	require.Regexp(t, `(?m)^  CLIENT +OWNER +HOLDS +TTL$`, r.stdout)
	r = runCmd(t, "", nil, "inspect", "--json", "--redis", serverURL(), name)
	require.Equal(t, 0, r.code, r.stderr)
	var info lockInfo
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &info))
	require.Equal(t, lockKind("Election"), info.Kind)
	require.Equal(t, &electionInfo{Value: "10.0.0.7:9090", Rev: 2}, info.Leader)
	require.Len(t, info.Holders, 1)

	r = runCmd(t, "", nil, "unlock", "--force", "--yes", "--redis", serverURL(), name)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `unlocked "inspect:election"`)
	require.Contains(t, r.stdout, "a waiting campaigner is elected")
	select {
	case <-e.Done():
	case <-ctx.Done():
		t.Fatal("the leader was not told")
	}
	require.ErrorIs(t, e.Err(), redisync.ErrLockLost)
	r = runCmd(t, "", nil, "inspect", "--redis", serverURL(), name)
	require.NotEqual(t, 0, r.code, "no leader, no key")
	require.Contains(t, r.stderr, "an Election without a leader")
}

// watch reports an Election's new leader, its proclamation and its
// resignation.
func TestWatchElection(t *testing.T) {
	c, _ := newLibClient(t)
	ctx := context.Background()
	_, lines, stderr := startWatch(t, "--duration", "30s", "watchelection:*")
	e := c.NewElection("watchelection:e")
	require.NoError(t, e.Campaign(ctx, "a"))
	require.NoError(t, e.Proclaim(ctx, "b"))
	require.NoError(t, e.Resign(ctx))

	want := []*regexp.Regexp{
		regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3}  elected +watchelection:e  \(Election: a new leader\)$`),
		regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3}  proclaim +watchelection:e  \(Election: the leader proclaimed a new value\)$`),
		regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3}  resign +watchelection:e  \(Election: the leader resigned; a waiting campaigner is elected\)$`),
	}
	var seen []string
	for lines.Scan() && len(want) > 0 {
		seen = append(seen, lines.Text())
		if want[0].MatchString(lines.Text()) {
			want = want[1:]
		}
	}
	require.Empty(t, want, "saw %q; stderr %s", seen, stderr.String())
}
