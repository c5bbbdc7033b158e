package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
)

func TestInspectHeld(t *testing.T) {
	c, rc := newLibClient(t)
	ctx := redisync.WithOwner(context.Background())
	m := c.NewMutex("inspect:held")
	require.NoError(t, m.LockContext(ctx))
	require.NoError(t, m.LockContext(ctx)) // re-entered: hold count 2
	defer func() {
		require.NoError(t, m.UnlockContext(ctx))
		require.NoError(t, m.UnlockContext(ctx))
	}()
	fields, err := rc.Do(ctx, rc.B().Hkeys().Key("inspect:held").Build()).AsStrSlice()
	require.NoError(t, err)
	require.Len(t, fields, 1)
	i := strings.LastIndexByte(fields[0], ':')
	client, owner := fields[0][:i], fields[0][i+1:]

	r := runCmd(t, "", nil, "inspect", "--redis", serverURL(), "inspect:held")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^Mutex "inspect:held": locked, [0-9.]+s left\n`, r.stdout)
	require.Regexp(t, `(?m)^  CLIENT +OWNER +HOLDS +TTL$`, r.stdout)
	require.Regexp(t, `(?m)^  `+shown(c)+` +`+owner+` +2 +[0-9.]+s left$`, r.stdout) // the Client by its name

	// --json after the name, and the server from REDIS_URL.
	r = runCmd(t, "", []string{"REDIS_URL=" + serverURL()}, "inspect", "inspect:held", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var info lockInfo
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &info))
	require.Equal(t, lockKind("Mutex"), info.Kind)
	require.Equal(t, "inspect:held", info.Name)
	require.True(t, info.Locked)
	require.Len(t, info.Holders, 1)
	h := info.Holders[0]
	require.Equal(t, client, h.Client)
	require.Equal(t, c.Name(), h.ClientName)
	require.Equal(t, owner, h.Owner)
	require.EqualValues(t, 2, h.Count)
	// The default watchdog lease is 30 s; the key was just renewed or set.
	require.InDelta(t, 25_000, info.TTLMillis, 5_000)
	require.Equal(t, info.TTLMillis, h.TTLMillis)
}

func TestInspectMissingAndForeign(t *testing.T) {
	_, rc := newLibClient(t)
	ctx := context.Background()
	require.NoError(t, rc.Do(ctx, rc.B().Set().Key("inspect:string").Value("v").Build()).Error())
	require.NoError(t, rc.Do(ctx, rc.B().Hset().Key("inspect:hash").FieldValue().FieldValue("colour", "red").Build()).Error())
	t.Cleanup(func() { rc.Do(context.Background(), rc.B().Del().Key("inspect:string", "inspect:hash").Build()) })

	for _, tc := range []struct{ name, stderr string }{
		{name: "inspect:missing", stderr: `no lock named "inspect:missing": key "inspect:missing" does not exist`},
		{name: "inspect:string", stderr: `key "inspect:string" is a string that is not a redisync lock`},
		{name: "inspect:hash", stderr: `key "inspect:hash" is a hash that is not a redisync lock (its fields, such as "colour"`},
	} {
		for _, cmd := range [][]string{{"inspect"}, {"inspect", "--json"}, {"unlock", "--force", "--yes"}} {
			r := runCmd(t, "", nil, append(cmd, "--redis", serverURL(), tc.name)...)
			require.Equal(t, exitFail, r.code)
			require.Contains(t, r.stderr, tc.stderr)
			require.Empty(t, r.stdout)
		}
	}
	n, err := rc.Do(ctx, rc.B().Exists().Key("inspect:string", "inspect:hash").Build()).AsInt64()
	require.NoError(t, err)
	require.EqualValues(t, 2, n, "unlock --force must not delete a foreign key")
}

func TestUnlockForce(t *testing.T) {
	holder, rc := newLibClient(t)
	waiter, _ := newLibClient(t)
	ctx := context.Background()
	m := holder.NewMutex("unlock:force")
	require.NoError(t, m.LockContext(ctx))

	// Declined: "n" leaves the lock as it was.
	r := runCmd(t, "n\n", nil, "unlock", "--force", "--redis", serverURL(), "unlock:force")
	require.Equal(t, exitFail, r.code)
	require.Contains(t, r.stdout, `Force-unlock Mutex "unlock:force"? Its holders lose it. [y/N]`)
	require.Contains(t, r.stderr, "not unlocked: not confirmed")
	locked, err := m.IsLocked(ctx)
	require.NoError(t, err)
	require.True(t, locked)

	// A waiter in another Client is woken by the release message: the lease
	// is 30 s, so only that can hand it the lock within the test's seconds.
	acquired := make(chan error, 1)
	wm := waiter.NewMutex("unlock:force")
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		acquired <- wm.LockContext(wctx)
	}()
	time.Sleep(200 * time.Millisecond) // let the waiter subscribe and wait
	r = runCmd(t, "", nil, "unlock", "--force", "--yes", "--redis", serverURL(), "unlock:force")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `unlocked "unlock:force"`)
	select {
	case err := <-acquired:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter was not woken by the force unlock")
	}
	// The holder was told at once, on its Client's channel, and the command
	// says so; its next renewal is 10 s away.
	select {
	case <-m.Done():
		require.ErrorIs(t, m.Err(), redisync.ErrForceUnlocked)
	case <-time.After(5 * time.Second):
		t.Fatal("the holder was not told")
	}
	require.Regexp(t, `holder `+shown(holder)+` was told at once`, r.stdout)
	require.NoError(t, wm.UnlockContext(ctx))
	n, err := rc.Do(ctx, rc.B().Exists().Key("unlock:force").Build()).AsInt64()
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestUnlockYesAnswer(t *testing.T) {
	c, rc := newLibClient(t)
	ctx := context.Background()
	require.NoError(t, c.NewMutex("unlock:yes").LockContext(ctx))
	r := runCmd(t, "yes\n", nil, "unlock", "--redis", serverURL(), "--force", "unlock:yes")
	require.Equal(t, 0, r.code, r.stderr)
	n, err := rc.Do(ctx, rc.B().Exists().Key("unlock:yes").Build()).AsInt64()
	require.NoError(t, err)
	require.Zero(t, n, "the lock key must be gone")
}

func TestWatch(t *testing.T) {
	c, rc := newLibClient(t)
	ctx := context.Background()
	keyspace := target.Real()
	if keyspace {
		// The test may configure its own server; the command never does.
		require.NoError(t, rc.Do(ctx, rc.B().ConfigSet().ParameterValue().ParameterValue("notify-keyspace-events", "Khgx").Build()).Error())
		t.Cleanup(func() {
			rc.Do(context.Background(), rc.B().ConfigSet().ParameterValue().ParameterValue("notify-keyspace-events", "").Build())
		})
	}
	want := 1 // the release
	if keyspace {
		want = 2 // acquire and release
	}
	cmd, lines, stderr := startWatch(t, "--count", strconv.Itoa(want), "--duration", "20s", "watch:*")

	m := c.NewMutex("watch:one")
	other := c.NewMutex("elsewhere") // does not match the pattern
	require.NoError(t, other.LockContext(ctx))
	require.NoError(t, m.LockContext(ctx))
	require.NoError(t, other.UnlockContext(ctx))
	require.NoError(t, m.UnlockContext(ctx))

	var events []string
	for lines.Scan() {
		events = append(events, lines.Text())
	}
	require.NoError(t, cmd.Wait(), stderr.String())
	require.Len(t, events, want, events)
	if keyspace {
		// Named when watch reads the lock before its release (see
		// TestWatchMutexHandover for a hold that waits for it).
		require.Regexp(t, `^\d\d:\d\d:\d\d\.\d{3}  acquire  watch:one(  \(by `+shown(c)+`\))?$`, events[0])
	}
	require.Regexp(t, `^\d\d:\d\d:\d\d\.\d{3}  release  watch:one$`, events[want-1])
}

func TestWatchStops(t *testing.T) {
	// --duration ends a quiet watch with exit status 0.
	start := time.Now()
	r := runCmd(t, "", nil, "watch", "--redis", serverURL(), "--duration", "300ms", "watch:quiet")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `# watching locks matching "watch:quiet"`)
	require.Less(t, time.Since(start), 10*time.Second)

	// SIGINT (Ctrl-C) ends it cleanly too.
	cmd := exec.Command(bin, "watch", "--redis", serverURL())
	cmd.Env = cleanEnv()
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(out)
	for lines.Scan() && !strings.HasPrefix(lines.Text(), "# watching") {
	}
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	for lines.Scan() {
	}
	require.NoError(t, cmd.Wait(), "watch must exit 0 on SIGINT")
}

// inspect and top name a holding Client by the name given to WithName, with
// its host and process; a Client without a record (a Java client's, or one
// gone) shows as its id.
func TestToolsNameTheClient(t *testing.T) {
	c, _ := newLibClient(t, redisync.WithName("orders-svc"))
	ctx := context.Background()
	m := c.NewMutex("inspect:named")
	require.NoError(t, m.LockContext(ctx))
	defer func() { require.NoError(t, m.UnlockContext(ctx)) }()
	host, _ := os.Hostname()
	want := fmt.Sprintf("orders-svc (%s/%d)", host, os.Getpid())

	r := runCmd(t, "", nil, "inspect", "--redis", serverURL(), "inspect:named")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^  `+regexp.QuoteMeta(want)+` +\d+ +1 +[0-9.]+s left$`, r.stdout)
	info := inspectJSON(t, "inspect:named")
	require.Len(t, info.Holders, 1)
	require.Equal(t, c.ID(), info.Holders[0].Client)
	require.Equal(t, want, info.Holders[0].ClientName)

	row := &topRow{info: &info}
	require.Regexp(t, `^`+regexp.QuoteMeta(want)+`:\d+$`, row.holder(), "top's HOLDER")
	row.info.Holders[0].ClientName = ""
	require.Equal(t, c.ID()[:8]+":"+info.Holders[0].Owner, row.holder(), "without a record: the id's start")
}
