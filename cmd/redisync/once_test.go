package main

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/redistest"
)

// inspect shows a Once's runner while its function runs, and then that it is
// done; unlock --force takes the claim away, cancelling the function.
func TestInspectAndUnlockOnce(t *testing.T) {
	c, _ := newLibClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	name := "inspect:once" + redistest.UniqueSuffix() // a Once is done for good
	o := c.NewOnce(name)
	running := make(chan struct{})
	var cause error
	ran := waitFor(func() error {
		return o.Do(ctx, func(fctx context.Context) error {
			close(running)
			<-fctx.Done()
			cause = context.Cause(fctx)
			return errors.New("interrupted")
		})
	})
	<-running

	r := runCmd(t, "", nil, "inspect", "--redis", serverURL(), name)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^Once "`+regexp.QuoteMeta(name)+`": not done; its function is running, claim [0-9.]+s left\n`, r.stdout)
	require.Regexp(t, `(?m)^  CLIENT +OWNER +HOLDS +TTL$`, r.stdout)

	r = runCmd(t, "", nil, "unlock", "--force", "--yes", "--redis", serverURL(), name)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `unlocked "`+name+`"`)
	require.Contains(t, r.stdout, "a waiting caller runs the function again")
	require.EqualError(t, <-ran, "interrupted")
	require.ErrorIs(t, cause, redisync.ErrLockLost, "the function's context ended with the claim")

	require.NoError(t, o.Do(ctx, func(context.Context) error { return nil }))
	r = runCmd(t, "", nil, "inspect", "--json", "--redis", serverURL(), name)
	require.Equal(t, 0, r.code, r.stderr)
	var info lockInfo
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &info))
	require.Equal(t, lockKind("Once"), info.Kind)
	require.False(t, info.Locked)
	require.NotNil(t, info.Done)
	require.True(t, *info.Done)
}

// inspect reads a WaitGroup's counter (a Redisson RCountDownLatch); unlock
// refuses it, naming Add.
func TestInspectWaitGroup(t *testing.T) {
	c, _ := newLibClient(t)
	ctx := context.Background()
	const name = "inspect:wg"
	wg := c.NewWaitGroup(name)
	require.NoError(t, wg.Add(ctx, 3))
	defer func() { _ = wg.Add(ctx, -3) }()
	r := runCmd(t, "", nil, "inspect", "--redis", serverURL(), name)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^WaitGroup "inspect:wg": count 3: Wait blocks until Done brings it to zero \(channel redisson_countdownlatch__channel__\{inspect:wg\}\)\n`, r.stdout)
	r = runCmd(t, "", nil, "unlock", "--force", "--yes", "--redis", serverURL(), name)
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "change its counter with Add")
}

// watch reports a Once's success and a WaitGroup reaching zero.
func TestWatchOnceAndWaitGroup(t *testing.T) {
	c, _ := newLibClient(t)
	ctx := context.Background()
	prefix := "watchsync" + redistest.UniqueSuffix() // a Once is done for good
	_, lines, stderr := startWatch(t, "--duration", "30s", prefix+":*")
	require.NoError(t, c.NewOnce(prefix+":once").Do(ctx, func(context.Context) error { return nil }))
	wg := c.NewWaitGroup(prefix + ":wg")
	require.NoError(t, wg.Add(ctx, 1))
	require.NoError(t, wg.Done(ctx))
	sem := c.NewCountingSemaphore(prefix+":sem", 2)
	require.NoError(t, sem.Acquire(ctx, 1)) // sets the count to 2 and takes 1: publishes 1
	sem.Release(1)                          // publishes 2

	p := regexp.QuoteMeta(prefix)
	want := []*regexp.Regexp{
		regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3}  done     ` + p + `:once  \(Once: the function succeeded; the waiters return\)$`),
		regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3}  zero     ` + p + `:wg  \(WaitGroup: the counter reached zero; Wait returns\)$`),
		regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3}  permits  ` + p + `:sem  \(CountingSemaphore or ExpirableSemaphore \(Redisson's RSemaphore or RPermitExpirableSemaphore\): free permits now 1, `),
		regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3}  permits  ` + p + `:sem  \(CountingSemaphore or ExpirableSemaphore \(Redisson's RSemaphore or RPermitExpirableSemaphore\): free permits now 2, `),
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
