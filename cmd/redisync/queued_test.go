package main

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/state"
)

// queuedIDs waits until the sorted set key holds n members and returns them
// in queue order.
func queuedIDs(t *testing.T, rc rueidis.Client, key string, n int) []string {
	t.Helper()
	var ids []string
	require.Eventually(t, func() bool {
		var err error
		ids, err = rc.Do(context.Background(), rc.B().Zrange().Key(key).Min("0").Max("-1").Build()).AsStrSlice()
		return err == nil && len(ids) == n
	}, 10*time.Second, 10*time.Millisecond, "want %d queued in %s", n, key)
	return ids
}

// waitFor starts f in a goroutine and returns its result channel.
func waitFor(f func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	return ch
}

func TestInspectFairMutexQueue(t *testing.T) {
	c, rc := newLibClient(t)
	ctx := context.Background()
	const name = "inspect:fair"
	holder := c.NewFairMutex(name)
	require.NoError(t, holder.LockContext(ctx))
	wctx, cancel := context.WithCancel(ctx)
	// Two waiters in other Clients, the second queued only after the first.
	var waits []<-chan error
	for i := range 2 {
		other, _ := newLibClient(t)
		waits = append(waits, waitFor(func() error { return other.NewFairMutex(name).LockContext(wctx) }))
		queuedIDs(t, rc, "redisync_fair_queue:{"+name+"}", i+1)
	}
	defer func() {
		cancel()
		for _, w := range waits {
			require.ErrorIs(t, <-w, context.Canceled)
		}
		require.NoError(t, holder.UnlockContext(ctx))
	}()
	ids := queuedIDs(t, rc, "redisync_fair_queue:{"+name+"}", 2)
	fields, err := rc.Do(ctx, rc.B().Hkeys().Key("redisync_fair:{"+name+"}").Build()).AsStrSlice()
	require.NoError(t, err)
	require.Len(t, fields, 1)
	client, owner := splitField(fields[0])

	r := runCmd(t, "", nil, "inspect", "--redis", serverURL(), name)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^FairMutex "inspect:fair": locked, 2\d\.\d+s left; 2 waiters queued\n`, r.stdout)
	require.Regexp(t, `(?m)^  `+shown(c)+` +`+owner+` +1 +2\d\.\d+s left$`, r.stdout)
	require.Contains(t, r.stdout, "\n  waiters, in queue order")
	// In queue order, each alive (a 5 s heartbeat renewed every 5/3 s).
	require.Regexp(t, `(?m)^  1 +`+regexp.QuoteMeta(ids[0])+` +`+shown(c)+` +alive for [0-5](\.\d+)?m?s unless renewed\n  2 +`+regexp.QuoteMeta(ids[1])+` +`+shown(c)+` +alive for `, r.stdout)

	info := inspectJSON(t, name)
	require.Equal(t, lockKind("FairMutex"), info.Kind)
	require.Equal(t, "redisync_fair:{"+name+"}", info.Key)
	require.True(t, info.Locked)
	require.Len(t, info.Holders, 1)
	require.Equal(t, client, info.Holders[0].Client)
	require.EqualValues(t, 1, info.Holders[0].Count)
	require.Len(t, info.Waiters, 2)
	for i, w := range info.Waiters {
		require.Equal(t, ids[i], w.ID, "queue order")
		require.NotNil(t, w.AliveMillis)
		require.Greater(t, *w.AliveMillis, int64(0))
		require.LessOrEqual(t, *w.AliveMillis, int64(5_000), "measured by the server's clock")
	}
	require.Less(t, info.Waiters[0].Arrival, info.Waiters[1].Arrival)
	require.Nil(t, info.Permits)
}

func TestInspectFairMutexDeadWaiter(t *testing.T) {
	_, rc := newLibClient(t)
	ctx := context.Background()
	const name = "inspect:fairdead"
	// A queue written by hand: one waiter whose heartbeat lapsed 3 s ago by
	// the server's clock, nobody holding the lock.
	now, err := state.ServerMillis(ctx, rc)
	require.NoError(t, err)
	q, a := "redisync_fair_queue:{"+name+"}", "redisync_fair_alive:{"+name+"}"
	require.NoError(t, rc.Do(ctx, rc.B().Zadd().Key(q).ScoreMember().ScoreMember(1, "c:w1").Build()).Error())
	require.NoError(t, rc.Do(ctx, rc.B().Zadd().Key(a).ScoreMember().ScoreMember(float64(now-3000), "c:w1").Build()).Error())
	t.Cleanup(func() { rc.Do(context.Background(), rc.B().Del().Key(q, a).Build()) })
	r := runCmd(t, "", nil, "inspect", "--redis", serverURL(), name)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^FairMutex "inspect:fairdead": not locked; 1 waiter queued\n`, r.stdout)
	require.Regexp(t, `(?m)^  1 +c:w1 +c +dead since [3-9](\.\d+)?s: will be skipped$`, r.stdout) // no record of Client c: its id
}

func TestInspectSemaphore(t *testing.T) {
	c, rc := newLibClient(t)
	ctx := context.Background()
	const name = "inspect:sem"
	k := layout.SemOf(name)
	t.Cleanup(func() { rc.Do(context.Background(), rc.B().Del().Key(k.Size).Build()) })
	a, b := c.NewSemaphore(name, 3), c.NewSemaphore(name, 3)
	require.NoError(t, a.Acquire(ctx, 2))
	require.NoError(t, b.Acquire(ctx, 1))
	defer a.Release(2)
	defer b.Release(1)
	wctx, cancel := context.WithCancel(ctx)
	other, _ := newLibClient(t)
	ws := other.NewSemaphore(name, 3)
	wait := waitFor(func() error { return ws.Acquire(wctx, 2) })
	defer cancel()
	ids := queuedIDs(t, rc, k.Queue, 1)
	held, err := rc.Do(ctx, rc.B().Hgetall().Key(k.Holders).Build()).AsStrMap()
	require.NoError(t, err)
	var twoID string
	for id, entry := range held {
		if strings.HasPrefix(entry, "2:") { // "<permits>:<version>"
			twoID = id
		}
	}
	require.NotEmpty(t, twoID, held)
	client, handle := splitField(twoID)

	r := runCmd(t, "", nil, "inspect", "--redis", serverURL(), name)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^Semaphore "inspect:sem": size 3, 3 permits taken by 2 holders, 0 available; 1 request queued\n`, r.stdout)
	require.Regexp(t, `(?m)^  CLIENT +HOLDER +PERMITS +LEASE$`, r.stdout)
	require.Regexp(t, `(?m)^  `+shown(c)+` +`+handle+` +2 +2\d\.\d+s left$`, r.stdout)
	require.Regexp(t, `(?m)^  #  WAITER +CLIENT +WANTS +HEARTBEAT\n  1  `+regexp.QuoteMeta(ids[0])+` +`+shown(c)+` +2 +alive for `, r.stdout)

	info := inspectJSON(t, name)
	require.Equal(t, lockKind("Semaphore"), info.Kind)
	require.True(t, info.Locked)
	require.NotNil(t, info.Permits)
	require.EqualValues(t, 3, *info.Permits.Size)
	require.EqualValues(t, 3, info.Permits.Taken)
	require.EqualValues(t, 0, *info.Permits.Available)
	require.Len(t, info.Holders, 2)
	byPermits := map[int64]holderInfo{}
	for _, h := range info.Holders {
		require.False(t, h.Lapsed)
		byPermits[h.Permits] = h
	}
	require.Equal(t, client, byPermits[2].Client)
	require.Equal(t, handle, byPermits[2].Owner)
	require.InDelta(t, 27_000, byPermits[2].TTLMillis, 3_500, "lease left by the server's clock")
	require.Len(t, info.Waiters, 1)
	require.Equal(t, ids[0], info.Waiters[0].ID)
	require.EqualValues(t, 2, info.Waiters[0].Wants)

	// unlock --force takes every permit back and wakes the queued request,
	// which fits now; the size is kept.
	r = runCmd(t, "", nil, "unlock", "--force", "--yes", "--redis", serverURL(), name)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `unlocked "inspect:sem"`)
	require.NoError(t, <-wait, "the queued request was woken and took its permits")
	defer ws.Release(2)
	held, err = rc.Do(ctx, rc.B().Hgetall().Key(k.Holders).Build()).AsStrMap()
	require.NoError(t, err)
	require.Len(t, held, 1, "only the woken request holds: %v", held)
	for _, entry := range held {
		require.True(t, strings.HasPrefix(entry, "2:"), entry)
	}
	size, err := rc.Do(ctx, rc.B().Get().Key(k.Size).Build()).ToString()
	require.NoError(t, err)
	require.Equal(t, "3", size)
}

func TestInspectSemaphoreLapsedHolder(t *testing.T) {
	c, rc := newLibClient(t)
	ctx := context.Background()
	const name = "inspect:semlapsed"
	k := layout.SemOf(name)
	t.Cleanup(func() { rc.Do(context.Background(), rc.B().Del().Key(k.Size, k.Holders, k.Leases).Build()) })
	s := c.NewSemaphore(name, 2)
	require.NoError(t, s.Acquire(ctx, 1))
	defer s.Release(1)
	// A holder whose lease lapsed 2 s ago by the server's clock, written by
	// hand (no waiter runs a script that would reap it): not counted.
	now, err := state.ServerMillis(ctx, rc)
	require.NoError(t, err)
	require.NoError(t, rc.Do(ctx, rc.B().Hset().Key(k.Holders).FieldValue().FieldValue("dead:s9", "1:1").Build()).Error())
	require.NoError(t, rc.Do(ctx, rc.B().Zadd().Key(k.Leases).ScoreMember().ScoreMember(float64(now-2000), "dead:s9").Build()).Error())

	r := runCmd(t, "", nil, "inspect", "--redis", serverURL(), name)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^Semaphore "inspect:semlapsed": size 2, 1 permit taken by 1 holder, 1 available\n`, r.stdout)
	require.Regexp(t, `(?m)^  dead +s9 +1 +lapsed [2-9](\.\d+)?s ago: not counted`, r.stdout)
	info := inspectJSON(t, name)
	require.EqualValues(t, 1, info.Permits.Taken, "the lapsed holder is not counted")
	require.EqualValues(t, 1, *info.Permits.Available)
	require.Len(t, info.Holders, 2)
	require.False(t, info.Holders[0].Lapsed)
	require.True(t, info.Holders[1].Lapsed, "the lapsed holder comes last")
	require.EqualValues(t, 1, info.Holders[1].Permits)
	require.LessOrEqual(t, info.Holders[1].TTLMillis, int64(-2_000))
	require.Empty(t, info.Waiters)
}

func TestUnlockForceFairMutex(t *testing.T) {
	c, rc := newLibClient(t, redisync.WithWatchdogTimeout(1500*time.Millisecond))
	waiter, _ := newLibClient(t)
	ctx := context.Background()
	const name = "unlock:fair"
	holder := c.NewFairMutex(name)
	require.NoError(t, holder.LockContext(ctx))
	wm := waiter.NewFairMutex(name)
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	acquired := waitFor(func() error { return wm.LockContext(wctx) })
	queuedIDs(t, rc, "redisync_fair_queue:{"+name+"}", 1)

	// The holder's lease is renewed: only the force unlock's wake-up of the
	// head can hand the waiter the lock.
	r := runCmd(t, "", nil, "unlock", "--force", "--yes", "--redis", serverURL(), name)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^FairMutex "unlock:fair": locked, .*; 1 waiter queued\n`, r.stdout)
	require.Contains(t, r.stdout, `unlocked "unlock:fair"; its waiters were woken`)
	require.Contains(t, r.stdout, "the waiter whose turn is next was woken")
	select {
	case err := <-acquired:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the head of the queue was not woken by the force unlock")
	}
	requireLost(t, holder.Done(), holder.Err)
	require.NoError(t, wm.UnlockContext(ctx))
}

func TestWatchFairMutexTurn(t *testing.T) {
	c, rc := newLibClient(t)
	other, _ := newLibClient(t)
	ctx := context.Background()
	_, lines, stderr := startWatch(t, "--duration", "30s", "watchfair:*")
	const name = "watchfair:one"
	holder := c.NewFairMutex(name)
	require.NoError(t, holder.LockContext(ctx))
	wm := other.NewFairMutex(name)
	acquired := waitFor(func() error { return wm.LockContext(ctx) })
	ids := queuedIDs(t, rc, "redisync_fair_queue:{"+name+"}", 1)
	require.NoError(t, holder.UnlockContext(ctx)) // publishes the head's id
	require.NoError(t, <-acquired)
	require.NoError(t, wm.UnlockContext(ctx))

	// Keyspace events may come too, if the server has them on: look for the turn.
	want := regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3}  turn     watchfair:one  \(FairMutex: waiter ` + regexp.QuoteMeta(ids[0]) + ` of ` + shown(other) + ` is next\)$`)
	var seen []string
	for lines.Scan() {
		seen = append(seen, lines.Text())
		if want.MatchString(lines.Text()) {
			return
		}
	}
	t.Fatalf("no turn event for %s; saw %q; stderr %s", ids[0], seen, stderr.String())
}

// checkQueuedScenes checks the demo's FairMutex and Semaphore scenes: the
// workers were served in their order of arrival (by the Redis counter) with
// no inversion, and the Semaphore never had more inside than its size.
func checkQueuedScenes(t *testing.T, out string) {
	t.Helper()
	served := regexp.MustCompile(`(?m) acquired  served (\d)\w\w, queued (\d)\w\w,`).FindAllStringSubmatch(out, -1)
	require.Len(t, served, fairWorkers, out)
	for _, s := range served {
		require.Equal(t, s[1], s[2], "served out of queue order")
	}
	require.NotContains(t, out, "OUT OF ORDER")
	require.Contains(t, out, "\norder inversions: 0 ")
	require.Regexp(t, `(?m)^  4 FairMutex: five workers queue one after another\n      5 workers, 5 acquisitions, at most 1 inside \(1 allowed\),(?s:.*?) 0 order inversions$`, out)
	row := regexp.MustCompile(`(?m)^  5 Semaphore: 6 workers share 2 permits\n      6 workers, 18 acquisitions, at most (\d+) inside \(2 allowed\)$`).FindStringSubmatch(out)
	require.NotNil(t, row, out)
	most, _ := strconv.Atoi(row[1])
	require.GreaterOrEqual(t, most, 1)
	require.LessOrEqual(t, most, semSize)
	require.Regexp(t, `most inside the Semaphore at once: [12] of 2 permits`, out)
	require.NotContains(t, out, "HOLDERS AT ONCE")
}

// A Mutex's waiters queued in Redis show in queue order, after its holder.
func TestInspectMutexQueue(t *testing.T) {
	c, rc := newLibClient(t)
	ctx := context.Background()
	const name = "inspect:mutexqueue"
	holder := c.NewMutex(name)
	require.NoError(t, holder.LockContext(ctx))
	other, _ := newLibClient(t)
	wctx, cancel := context.WithCancel(ctx)
	wait := waitFor(func() error { return other.NewMutex(name).LockContext(wctx) })
	defer func() {
		cancel()
		require.ErrorIs(t, <-wait, context.Canceled)
		require.NoError(t, holder.UnlockContext(ctx))
	}()
	ids := queuedIDs(t, rc, layout.MutexOf(name).Queue, 1)

	r := runCmd(t, "", nil, "inspect", "--redis", serverURL(), name)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^Mutex "inspect:mutexqueue": locked, 2\d\.\d+s left; 1 waiter queued\n`, r.stdout)
	require.Contains(t, r.stdout, "\n  redisync waiters, in queue order")
	require.Regexp(t, `(?m)^  1 +`+regexp.QuoteMeta(ids[0])+` +`+shown(other)+` +alive for `, r.stdout)
	info := inspectJSON(t, name)
	require.Equal(t, lockKind("Mutex"), info.Kind)
	require.Len(t, info.Waiters, 1)
	require.Equal(t, ids[0], info.Waiters[0].ID)
}

// watch names a Mutex release that hands the lock to a queued waiter, as
// one event: the "0" the release publishes after the place number (for the
// waiters outside the queue) is not shown as a release of its own.
func TestWatchMutexHandover(t *testing.T) {
	c, rc := newLibClient(t)
	other, _ := newLibClient(t)
	ctx := context.Background()
	_, lines, stderr := startWatch(t, "--duration", "30s", "watchmutex:*")
	const name = "watchmutex:one"
	holder := c.NewMutex(name)
	require.NoError(t, holder.LockContext(ctx))
	wm := other.NewMutex(name)
	acquired := waitFor(func() error { return wm.LockContext(ctx) })
	queuedIDs(t, rc, layout.MutexOf(name).Queue, 1)
	require.NoError(t, holder.UnlockContext(ctx)) // hands the lock over
	require.NoError(t, <-acquired)

	event := regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3}  (\S+) +(\S+)(?:  (.*))?$`)
	var seen, events []string
	// wm holds the lock until the handover is shown: watch names the new
	// holder as it finds it when it reads the lock after the message.
	for lines.Scan() {
		seen = append(seen, lines.Text())
		if m := event.FindStringSubmatch(lines.Text()); m != nil {
			events = append(events, m[1]+" "+m[3])
			break
		}
	}
	require.NoError(t, wm.UnlockContext(ctx)) // nobody queued: "0"
	last := c.NewMutex("watchmutex:two")      // an event to end the sequence with
	require.NoError(t, last.LockContext(ctx))
	require.NoError(t, last.UnlockContext(ctx))
	for lines.Scan() {
		seen = append(seen, lines.Text())
		m := event.FindStringSubmatch(lines.Text())
		if m == nil {
			continue
		}
		if m[2] == "watchmutex:two" {
			break
		}
		events = append(events, m[1]+" "+m[3])
	}
	require.Len(t, events, 2, "saw %q; stderr %s", seen, stderr.String())
	assert.Equal(t, "handover (Mutex: handed to "+other.Name()+", the first live waiter in its queue)", events[0], "named by its Client")
	assert.Equal(t, "release ", events[1], "one release: the waiter's")
}
