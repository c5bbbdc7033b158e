package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/state"
)

// javaUUID stands for a Redisson client's UUID.
const javaUUID = "1b4e28ba-2fa1-41d2-883f-0016d3cca427"

// javaFairRelease stands in for a Java thread's RFairLock unlock, from
// Redisson's protocol: the hold count goes down, and the unlock that frees
// the lock deletes its hash and publishes "0" on the channel of the waiter at
// the head of the queue, which alone is woken.
const javaFairRelease = `
local left = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if left > 0 then return 0 end
redis.call('del', KEYS[1])
local head = redis.call('lindex', KEYS[2], 0)
if head then redis.call('publish', KEYS[3] .. ':' .. head, '0') end
return 1`

// A Java RFairLock, stood in for by its data in Redisson's layout: inspect
// names it and lists its queue with each waiter's eviction time (one
// overdue); a Go Mutex of the same name is excluded by its holder (they share
// the hash); watch shows the Java release's wake-up of the head as its turn;
// unlock --force frees it and keeps the queue.
func TestInspectWatchUnlockRFairLock(t *testing.T) {
	c, rc := newLibClient(t)
	if target.Mini != nil {
		t.Skip("miniredis: the Java stand-in's PUBLISH from a script does not reach subscribers")
	}
	ctx := context.Background()
	const name = "rfair:job"
	queue, timeouts := layout.Aux(layout.RFairQueuePrefix, name), layout.Aux(layout.RFairTimeoutPrefix, name)
	now, err := state.ServerMillis(ctx, rc)
	require.NoError(t, err)
	holder, second, third := javaUUID+":1", javaUUID+":2", javaUUID+":3"
	for _, cmd := range [][]string{
		{"HSET", name, holder, "1"}, {"PEXPIRE", name, "30000"},
		{"RPUSH", queue, second, third},
		{"ZADD", timeouts, strconv.FormatInt(now+10000, 10), second, strconv.FormatInt(now-1500, 10), third},
	} {
		require.NoError(t, rc.Do(ctx, rc.B().Arbitrary(cmd...).Build()).Error())
	}
	t.Cleanup(func() { rc.Do(ctx, rc.B().Del().Key(name, queue, timeouts).Build()) })

	r := runCmd(t, "", nil, "inspect", "--redis", serverURL(), name)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `RFairLock "rfair:job": locked, `)
	require.Contains(t, r.stdout, "; 2 waiters queued")
	require.Regexp(t, `(?m)^  `+javaUUID+`  1  +1  +\d`, r.stdout)
	require.Regexp(t, `(?m)^  1  `+regexp.QuoteMeta(second)+`  evicted in \d+(\.\d+)?s unless it gets the lock first$`, r.stdout)
	require.Regexp(t, `(?m)^  2  `+regexp.QuoteMeta(third)+`  overdue by 1\.\d+s: the next attempt evicts it$`, r.stdout)
	r = runCmd(t, "", nil, "inspect", "--json", "--redis", serverURL(), name)
	var info lockInfo
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &info))
	require.Equal(t, lockKind("RFairLock"), info.Kind)
	require.Len(t, info.Waiters, 2)

	ok, err := c.NewMutex(name).TryLockContext(ctx)
	require.NoError(t, err)
	require.False(t, ok, "a Go Mutex took a name a Java RFairLock holds")

	_, lines, stderr := startWatch(t, "--duration", "30s", "rfair:*")
	released, err := rc.Do(ctx, rc.B().Eval().Script(javaFairRelease).Numkeys(3).
		Key(name, queue, layout.Aux(layout.MutexChannelPrefix, name)).Arg(holder).Build()).AsInt64()
	require.NoError(t, err)
	require.EqualValues(t, 1, released)
	want := regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3}  turn     rfair:job  \(RFairLock: waiter ` + regexp.QuoteMeta(second) + ` is next\)$`)
	seen := false
	for !seen && lines.Scan() {
		seen = want.MatchString(lines.Text())
	}
	require.True(t, seen, "no turn event; stderr %s", stderr.String())

	// A Java thread holds it again; unlock --force frees it and keeps the queue.
	require.NoError(t, rc.Do(ctx, rc.B().Hset().Key(name).FieldValue().FieldValue(second, "1").Build()).Error())
	r = runCmd(t, "", nil, "unlock", "--force", "--yes", "--redis", serverURL(), name)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Redisson's queue is kept")
	n, err := rc.Do(ctx, rc.B().Exists().Key(name).Build()).AsInt64()
	require.NoError(t, err)
	require.Zero(t, n)
	kept, err := rc.Do(ctx, rc.B().Llen().Key(queue).Build()).AsInt64()
	require.NoError(t, err)
	require.EqualValues(t, 2, kept)
}

// A Java service's RPermitExpirableSemaphore, stood in for by its data in
// Redisson's layout (free permits at NAME, leased permit ids beside it):
// inspect names it and lists each permit's lease, one ended (free), one
// without a lease; unlock --force refuses it, saying why. A plain counter,
// which an RSemaphore's free permits look like, is shown as a WaitGroup with
// that said.
func TestInspectRPermitExpirableSemaphore(t *testing.T) {
	c, rc := newLibClient(t)
	ctx := context.Background()
	const name = "rperm:quota"
	permits := "{" + name + "}:timeout"
	now, err := state.ServerMillis(ctx, rc)
	require.NoError(t, err)
	for _, cmd := range [][]string{
		{"SET", name, "2"},
		{"ZADD", permits, strconv.FormatInt(now+20000, 10), "a1b2", strconv.FormatInt(now-1000, 10), "c3d4",
			strconv.FormatInt(layout.ExpirableSemNoLease, 10), "e5f6"},
		{"SET", "rperm:plain", "5"},
	} {
		require.NoError(t, rc.Do(ctx, rc.B().Arbitrary(cmd...).Build()).Error())
	}
	t.Cleanup(func() { rc.Do(ctx, rc.B().Del().Key(name, permits, "rperm:plain").Build()) })

	r := runCmd(t, "", nil, "inspect", "--redis", serverURL(), name)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `RPermitExpirableSemaphore "rperm:quota": 2 permits free, 2 taken (Redisson's`)
	require.Regexp(t, `(?m)^  a1b2  +(1\d|20)(\.\d+)?s left$`, r.stdout)
	require.Regexp(t, `(?m)^  c3d4  +ended 1(\.\d+)?s ago: free`, r.stdout)
	require.Regexp(t, `(?m)^  e5f6  +no lease: held until released$`, r.stdout)
	r = runCmd(t, "", nil, "unlock", "--force", "--yes", "--redis", serverURL(), name)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "force unlock of an RPermitExpirableSemaphore is not supported: its permits are released by id")

	// A Go ExpirableSemaphore's permit, recorded as its id's 16 bytes, is
	// shown by the id Go and Java callers use.
	x := c.NewExpirableSemaphore("rperm:go", 2)
	id, err := x.Acquire(ctx, time.Minute)
	require.NoError(t, err)
	t.Cleanup(func() { _ = x.Release(ctx, id) })
	r = runCmd(t, "", nil, "inspect", "--redis", serverURL(), "rperm:go")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `RPermitExpirableSemaphore "rperm:go": 1 permit free, 1 taken (Redisson's, which a Go ExpirableSemaphore shares)`)
	require.Regexp(t, `(?m)^  `+id+`  +(59|60)(\.\d+)?s left$`, r.stdout)

	r = runCmd(t, "", nil, "inspect", "--redis", serverURL(), "rperm:plain")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `WaitGroup "rperm:plain": count 5`)
	require.Contains(t, r.stdout, "a CountingSemaphore, Redisson's RSemaphore, keeps its free permits in the same form")
}

// A Go FairMutex kept in Redisson's layout (NewRedissonFairMutex) is shown as
// the RFairLock it shares: its Go holder, its Go waiter in Redisson's queue
// with its eviction time; unlock --force frees it, keeps the queue and wakes
// the Go waiter at its head, which then holds it.
func TestInspectUnlockGoRedissonFairMutex(t *testing.T) {
	c, _ := newLibClient(t)
	if target.Mini != nil {
		t.Skip("miniredis: a script's PUBLISH does not reach subscribers")
	}
	const name = "rfair:go"
	holder := c.NewRedissonFairMutex(name)
	holder.Lock()
	waiter := c.NewRedissonFairMutex(name)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	locked := make(chan error, 1)
	go func() { locked <- waiter.LockContext(ctx) }()
	var info lockInfo
	require.Eventually(t, func() bool {
		r := runCmd(t, "", nil, "inspect", "--json", "--redis", serverURL(), name)
		return r.code == 0 && json.Unmarshal([]byte(r.stdout), &info) == nil && len(info.Waiters) == 1
	}, 10*time.Second, 20*time.Millisecond, "the Go waiter in Redisson's queue")
	require.Equal(t, lockKind("RFairLock"), info.Kind)
	require.Len(t, info.Holders, 1)

	r := runCmd(t, "", nil, "unlock", "--force", "--yes", "--redis", serverURL(), name)
	require.Equal(t, 0, r.code, r.stderr)
	select {
	case err := <-locked:
		require.NoError(t, err, "the waiter at the head was woken")
	case <-time.After(10 * time.Second):
		t.Fatal("the Go waiter was not woken by the force unlock")
	}
	waiter.Unlock()
	require.Error(t, holder.UnlockContext(ctx), "the forced holder's release reports its loss")
}
