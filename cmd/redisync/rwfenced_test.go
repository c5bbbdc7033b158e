package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
)

// splitField splits a lock hash field "<uuid>:<owner>" (or a waiting
// writer "<uuid>:<owner>:write") into client and owner.
func splitField(field string) (client, owner string) {
	field = strings.TrimSuffix(field, ":write")
	i := strings.LastIndexByte(field, ':')
	return field[:i], field[i+1:]
}

// inspectJSON runs inspect --json on name and decodes its output.
func inspectJSON(t *testing.T, name string) lockInfo {
	t.Helper()
	r := runCmd(t, "", nil, "inspect", "--json", "--redis", serverURL(), name)
	require.Equal(t, 0, r.code, r.stderr)
	var info lockInfo
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &info))
	return info
}

func TestInspectRWMutexReaders(t *testing.T) {
	c, rc := newLibClient(t)
	ctx := context.Background()
	const name = "inspect:rw"
	a, b := redisync.WithOwner(ctx), redisync.WithOwner(ctx)
	rw := c.NewRWMutex(name)
	require.NoError(t, rw.RLockContext(a))
	require.NoError(t, rw.RLockContext(a)) // reader a re-entered: two read holds
	require.NoError(t, rw.RLockContext(b))
	defer func() {
		for _, o := range []context.Context{a, a, b} {
			require.NoError(t, rw.RUnlockContext(o))
		}
	}()
	// Shorten hold 1 of the re-entered reader, so that each hold's own lease
	// is seen, not the key's: 29.x s for hold 2, under 10 s for hold 1.
	fields, err := rc.Do(ctx, rc.B().Hgetall().Key(name).Build()).AsStrMap()
	require.NoError(t, err)
	var twice string
	for f, v := range fields {
		if v == "2" {
			twice = f
		}
	}
	require.NotEmpty(t, twice, fields)
	require.NoError(t, rc.Do(ctx, rc.B().Pexpire().Key("{"+name+"}:"+twice+":rwlock_timeout:1").Milliseconds(9000).Build()).Error())
	client, owner := splitField(twice)

	r := runCmd(t, "", nil, "inspect", "--redis", serverURL(), name)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^RWMutex "inspect:rw": locked for reading by 2 readers, [0-9.]+s left\n`, r.stdout)
	require.Regexp(t, `(?m)^  CLIENT +OWNER +MODE +HOLDS +TTL$`, r.stdout)
	require.Regexp(t, `(?m)^  `+regexp.QuoteMeta(nameOf(t, client))+` +`+owner+` +read +2 +2\d\.\d+s left \(holds: [0-8]\.\d+s, 2\d\.\d+s\)$`, r.stdout)
	require.Regexp(t, `(?m)^  \S+ +\d+ +read +1 +2\d\.\d+s left$`, r.stdout)

	info := inspectJSON(t, name)
	require.Equal(t, lockKind("RWMutex"), info.Kind)
	require.Equal(t, "read", info.Mode)
	require.True(t, info.Locked)
	require.Len(t, info.Holders, 2)
	counts := map[int64]holderInfo{}
	for _, h := range info.Holders {
		require.Equal(t, "read", h.Mode)
		require.Len(t, h.HoldTTLsMillis, int(h.Count))
		counts[h.Count] = h
	}
	h2 := counts[2]
	require.Equal(t, client, h2.Client)
	require.Equal(t, owner, h2.Owner)
	require.InDelta(t, 7_000, h2.HoldTTLsMillis[0], 2_500, "hold 1's own lease")
	require.InDelta(t, 27_000, h2.HoldTTLsMillis[1], 3_500, "hold 2's own lease")
	require.Equal(t, h2.HoldTTLsMillis[1], h2.TTLMillis)
	require.InDelta(t, 27_000, counts[1].TTLMillis, 3_500)
	require.Empty(t, info.WaitingWriters)
}

func TestInspectRWMutexWaitingWriter(t *testing.T) {
	c, rc := newLibClient(t)
	other, _ := newLibClient(t)
	ctx := context.Background()
	const name = "inspect:rwwriter"
	holder := c.NewRWMutex(name)
	require.NoError(t, holder.LockContext(ctx))
	defer func() { require.NoError(t, holder.UnlockContext(ctx)) }()
	wctx, cancel := context.WithCancel(ctx)
	waited := make(chan error, 1)
	go func() { waited <- other.NewRWMutex(name).LockContext(wctx) }()
	defer func() { cancel(); require.ErrorIs(t, <-waited, context.Canceled) }()
	var claims []rueidis.ZScore
	require.Eventually(t, func() bool {
		var err error
		claims, err = rc.Do(ctx, rc.B().Zrange().Key("redisync_rwlock_writers:{"+name+"}").Min("0").Max("-1").Withscores().Build()).AsZScores()
		return err == nil && len(claims) == 1
	}, 5*time.Second, 20*time.Millisecond)
	wClient, wOwner := splitField(claims[0].Member)
	hf, err := rc.Do(ctx, rc.B().Hkeys().Key(name).Build()).AsStrSlice()
	require.NoError(t, err)
	require.Len(t, hf, 2, "mode and the writer field")
	var writer string
	for _, f := range hf {
		if f != "mode" {
			writer = f
		}
	}
	hClient, hOwner := splitField(writer)

	r := runCmd(t, "", nil, "inspect", "--redis", serverURL(), name)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^RWMutex "inspect:rwwriter": locked for writing, 2\d\.\d+s left\n`, r.stdout)
	require.Regexp(t, `(?m)^  `+regexp.QuoteMeta(nameOf(t, hClient))+` +`+hOwner+` +write +1 +2\d\.\d+s left$`, r.stdout)
	require.Contains(t, r.stdout, "\n  waiting writers (new readers wait behind them):\n")
	// The claim lasts 3 s and is renewed while the writer waits.
	require.Regexp(t, `(?m)^  `+regexp.QuoteMeta(nameOf(t, wClient))+` +`+wOwner+` +lapses in [0-3](\.\d+)?m?s unless it tries again$`, r.stdout)

	info := inspectJSON(t, name)
	require.Equal(t, "write", info.Mode)
	require.Len(t, info.Holders, 1)
	require.Equal(t, "write", info.Holders[0].Mode)
	require.Len(t, info.WaitingWriters, 1)
	ww := info.WaitingWriters[0]
	require.Equal(t, wClient, ww.Client)
	require.Equal(t, wOwner, ww.Owner)
	require.Greater(t, ww.ClaimMillis, int64(0))
	require.LessOrEqual(t, ww.ClaimMillis, int64(3_000), "measured by the server's clock")
}

func TestInspectFencedMutex(t *testing.T) {
	c, rc := newLibClient(t)
	ctx := context.Background()
	const name = "inspect:fenced"
	t.Cleanup(func() {
		rc.Do(context.Background(), rc.B().Del().Key("redisson_lock_token:{"+name+"}", "redisync_fence:{"+name+"}").Build())
	})
	fm := c.NewFencedMutex(name)
	token, err := fm.LockToken(ctx)
	require.NoError(t, err)
	require.NoError(t, c.NewFence(name).Set(ctx, token, "hello"))
	tok := strconv.FormatUint(token, 10)

	r := runCmd(t, "", nil, "inspect", "--redis", serverURL(), name)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^FencedMutex "inspect:fenced": locked, 2\d\.\d+s left\n`, r.stdout)
	require.Regexp(t, `(?m)^  CLIENT +OWNER +HOLDS +TTL$`, r.stdout)
	require.Contains(t, r.stdout, "\n  latest token: "+tok+" (counter redisson_lock_token:{inspect:fenced}; kept after release")
	require.Contains(t, r.stdout, "\n  fence redisync_fence:{inspect:fenced}: highest accepted token "+tok+", value 5 bytes")
	info := inspectJSON(t, name)
	require.Equal(t, lockKind("FencedMutex"), info.Kind)
	require.True(t, info.Locked)
	require.Len(t, info.Holders, 1)
	require.NotNil(t, info.Token)
	require.Equal(t, token, *info.Token)
	require.Equal(t, &fenceInfo{Key: "redisync_fence:{inspect:fenced}", Token: token, ValueBytes: 5}, info.Fence)

	// Released: the lock hash is gone, the counter is not.
	require.NoError(t, fm.UnlockContext(ctx))
	r = runCmd(t, "", nil, "inspect", "--redis", serverURL(), name)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^FencedMutex "inspect:fenced": not locked\n\n  latest token: `+tok+` `, r.stdout)
	info = inspectJSON(t, name)
	require.False(t, info.Locked)
	require.Empty(t, info.Holders)
	require.Equal(t, token, *info.Token)
}

func TestUnlockForceFencedMutex(t *testing.T) {
	// A short watchdog: the holder learns of the loss at its next renewal.
	c, rc := newLibClient(t, redisync.WithWatchdogTimeout(1500*time.Millisecond))
	ctx := context.Background()
	const name = "unlock:fenced"
	counter := "redisson_lock_token:{" + name + "}"
	t.Cleanup(func() { rc.Do(context.Background(), rc.B().Del().Key(counter).Build()) })
	fm := c.NewFencedMutex(name)
	token, err := fm.LockToken(ctx)
	require.NoError(t, err)

	r := runCmd(t, "", nil, "unlock", "--force", "--yes", "--redis", serverURL(), name)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `unlocked "unlock:fenced"; its waiters were woken`)
	require.Contains(t, r.stdout, "(the token counter "+counter+" is kept (latest token "+strconv.FormatUint(token, 10)+")")
	n, err := rc.Do(ctx, rc.B().Exists().Key(name).Build()).AsInt64()
	require.NoError(t, err)
	require.Zero(t, n, "the lock hash must be gone")
	got, err := rc.Do(ctx, rc.B().Get().Key(counter).Build()).AsUint64()
	require.NoError(t, err, "the token counter must be kept")
	require.Equal(t, token, got)
	requireLost(t, fm.Done(), fm.Err)

	// Not locked any more: nothing to do, and still no error.
	r = runCmd(t, "", nil, "unlock", "--force", "--yes", "--redis", serverURL(), name)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `FencedMutex "unlock:fenced" is not locked; nothing to unlock`)
}

func TestUnlockForceRWMutex(t *testing.T) {
	c, rc := newLibClient(t, redisync.WithWatchdogTimeout(1500*time.Millisecond))
	waiter, _ := newLibClient(t)
	ctx := context.Background()
	const name = "unlock:rw"
	readers := []*redisync.RWMutex{c.NewRWMutex(name), c.NewRWMutex(name)}
	for _, r := range readers {
		require.NoError(t, r.RLockContext(ctx))
	}
	acquired := make(chan error, 1)
	w := waiter.NewRWMutex(name)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		acquired <- w.LockContext(wctx)
	}()
	time.Sleep(200 * time.Millisecond) // let the writer wait

	r := runCmd(t, "", nil, "unlock", "--force", "--yes", "--redis", serverURL(), name)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^RWMutex "unlock:rw": locked for reading by 2 readers`, r.stdout)
	require.Contains(t, r.stdout, `unlocked "unlock:rw"; its waiters were woken`)
	require.Contains(t, r.stdout, "readers and writer alike lost it")
	select {
	case err := <-acquired:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting writer did not get the lock after the force unlock")
	}
	mode, err := rc.Do(ctx, rc.B().Hget().Key(name).Field("mode").Build()).ToString()
	require.NoError(t, err)
	require.Equal(t, "write", mode, "the readers' holds must be gone")
	require.NoError(t, w.UnlockContext(ctx))
	for _, r := range readers {
		requireLost(t, r.Done(), r.Err)
	}
}

// requireLost waits for a hold to end and checks it ended as lost.
func requireLost(t *testing.T, done <-chan struct{}, errOf func() error) {
	t.Helper()
	select {
	case <-done:
		require.ErrorIs(t, errOf(), redisync.ErrLockLost)
	case <-time.After(5 * time.Second):
		t.Fatal("the holder was not told of its loss")
	}
}

func TestWatchRWMutex(t *testing.T) {
	c, _ := newLibClient(t)
	ctx := context.Background()
	cmd, lines, stderr := startWatch(t, "--count", "1", "--duration", "20s", "watchrw:*")
	rw := c.NewRWMutex("watchrw:one")
	require.NoError(t, rw.LockContext(ctx))
	require.NoError(t, rw.UnlockContext(ctx)) // a write release: message "1"

	var events []string
	for lines.Scan() {
		events = append(events, lines.Text())
	}
	require.NoError(t, cmd.Wait(), stderr.String())
	require.Len(t, events, 1, events)
	require.Regexp(t, `^\d\d:\d\d:\d\d\.\d{3}  release  watchrw:one  \(RWMutex: a write unlock or downgrade, or the last reader left; wakes every waiter\)$`, events[0])
}

// checkFencedScene checks the demo's fenced scene: the paused holder's
// write was rejected, after the next holder's write with a higher token was
// accepted, and the summary says so.
func checkFencedScene(t *testing.T, out string) {
	t.Helper()
	require.Contains(t, out, "w1 paused with SIGSTOP before its write")
	require.Regexp(t, `w2 acquired  took over [0-9.]+m?s after the pause: the paused holder's lease ran out, token \d+`, out)
	tokens := regexp.MustCompile(`(?m)(w[12]) acquired  .*, token (\d+)$`).FindAllStringSubmatch(out, -1)
	require.Len(t, tokens, 2, out)
	require.Equal(t, "w1", tokens[0][1])
	t1, _ := strconv.ParseUint(tokens[0][2], 10, 64)
	t2, _ := strconv.ParseUint(tokens[1][2], 10, 64)
	require.Greater(t, t2, t1, "the second holder's token must be higher")
	require.Contains(t, out, "w2 wrote through the fence with token "+tokens[1][2]+": accepted")
	require.Contains(t, out, "w1's write with token "+tokens[0][2]+" REJECTED by the fence (ErrStaleToken)")
	require.Contains(t, out, "the fence keeps w2's write: token "+tokens[1][2]+",")
	require.Regexp(t, `(?m)^  3 FencedMutex: a paused holder's lease runs out\n      2 workers, 2 acquisitions, 1 stale write rejected,\n      takeover [0-9.]+[mµ]?s \(lease 1s\)$`, out)
}
