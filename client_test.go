package redisync_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/redisserver"
)

// A closedCall is one call of a public method on a closed Client.
type closedCall struct {
	name string
	err  func(ctx context.Context) error // returns an error wrapping ErrClosed
	no   func() bool                     // a bool-only call: reports false
	dies func()                          // documented to panic on a closed Client
	runs func()                          // documented not to panic (an Unlock of a hold Close ended)
}

// Every call of every primitive on a closed Client returns an error
// wrapping ErrClosed (or false, or its documented panic), and none changes
// Redis: the holds taken before Close stay until their lease ends, the
// counters and values stay as they were.
func TestClosedClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := freshName(t)
	name := func(s string) string { return base + ":" + s }
	c, rc := newClient(t, standalone)

	// Holds and state taken before Close, for the calls that need them.
	held := func(lock func(context.Context) error) { require.NoError(t, lock(ctx)) }
	m, mu, fenced, fencedU := c.NewMutex(name("m")), c.NewMutex(name("mu")), c.NewFencedMutex(name("f")), c.NewFencedMutex(name("fu"))
	held(m.LockContext)
	held(mu.LockContext)
	held(fenced.LockContext)
	held(fencedU.LockContext)
	rw, rwU, rwR, rwRU := c.NewRWMutex(name("rw")), c.NewRWMutex(name("rwu")), c.NewRWMutex(name("rwr")), c.NewRWMutex(name("rwru"))
	held(rw.LockContext)
	held(rwU.LockContext)
	held(rwR.RLockContext)
	held(rwRU.RLockContext)
	fair, fairU := c.NewFairMutex(name("fair")), c.NewFairMutex(name("fairu"))
	held(fair.LockContext)
	held(fairU.LockContext)
	rfair, rfairU := c.NewRedissonFairMutex(name("rfair")), c.NewRedissonFairMutex(name("rfairu"))
	held(rfair.LockContext)
	held(rfairU.LockContext)
	multi, multiU := c.NewMultiMutex([]string{name("a"), name("b")}), c.NewMultiMutex([]string{name("c"), name("d")})
	held(multi.LockContext)
	held(multiU.LockContext)
	fence := c.NewFence(name("fence"))
	require.NoError(t, fence.Set(ctx, 5, "v"))
	sem := c.NewSemaphore(name("sem"), 3)
	require.NoError(t, sem.Acquire(ctx, 2))
	csem := c.NewCountingSemaphore(name("csem"), 3)
	require.NoError(t, csem.Acquire(ctx, 2))
	xsem := c.NewExpirableSemaphore(name("xsem"), 3)
	ids, err := xsem.AcquireN(ctx, 2, time.Minute)
	require.NoError(t, err)
	once := c.NewOnce(name("once"))
	require.NoError(t, once.Do(ctx, func(context.Context) error { return nil }))
	wg := c.NewWaitGroup(name("wg"))
	require.NoError(t, wg.Add(ctx, 2))
	e, eR := c.NewElection(name("e")), c.NewElection(name("er"))
	require.NoError(t, e.Campaign(ctx, "e"))
	require.NoError(t, eR.Campaign(ctx, "er"))

	before := snapshot(ctx, t, rc, base)
	require.NoError(t, c.Close())

	calls := []closedCall{
		{name: "Mutex.Lock", dies: m.Lock},
		{name: "Mutex.LockContext", err: m.LockContext},
		{name: "Mutex.TryLock", no: m.TryLock},
		{name: "Mutex.TryLockContext", err: tryErr(m.TryLockContext)},
		{name: "Mutex.Unlock", runs: m.Unlock},
		{name: "Mutex.UnlockContext", err: mu.UnlockContext},
		{name: "Mutex.ForceUnlock", err: tryErr(m.ForceUnlock)},
		{name: "Mutex.HoldCount", err: valueErr(m.HoldCount)},
		{name: "Mutex.IsLocked", err: tryErr(m.IsLocked)},
		{name: "Mutex.TTL", err: valueErr(m.TTL)},

		{name: "FencedMutex.Lock", dies: fenced.Lock},
		{name: "FencedMutex.LockContext", err: fenced.LockContext},
		{name: "FencedMutex.LockToken", err: valueErr(fenced.LockToken)},
		{name: "FencedMutex.TryLock", no: fenced.TryLock},
		{name: "FencedMutex.TryLockContext", err: tryErr(fenced.TryLockContext)},
		{name: "FencedMutex.TryLockToken", err: func(ctx context.Context) error {
			_, _, err := fenced.TryLockToken(ctx)
			return err
		}},
		{name: "FencedMutex.Unlock", runs: fenced.Unlock},
		{name: "FencedMutex.UnlockContext", err: fencedU.UnlockContext},
		{name: "FencedMutex.ForceUnlock", err: tryErr(fenced.ForceUnlock)},
		{name: "FencedMutex.HoldCount", err: valueErr(fenced.HoldCount)},
		{name: "FencedMutex.IsLocked", err: tryErr(fenced.IsLocked)},
		{name: "FencedMutex.TTL", err: valueErr(fenced.TTL)},

		{name: "RWMutex.Lock", dies: rw.Lock},
		{name: "RWMutex.RLock", dies: rw.RLock},
		{name: "RWMutex.RLocker.Lock", dies: rw.RLocker().Lock},
		{name: "RWMutex.LockContext", err: rw.LockContext},
		{name: "RWMutex.RLockContext", err: rw.RLockContext},
		{name: "RWMutex.TryLock", no: rw.TryLock},
		{name: "RWMutex.TryRLock", no: rw.TryRLock},
		{name: "RWMutex.TryLockContext", err: tryErr(rw.TryLockContext)},
		{name: "RWMutex.TryRLockContext", err: tryErr(rw.TryRLockContext)},
		{name: "RWMutex.Unlock", runs: rw.Unlock},
		{name: "RWMutex.UnlockContext", err: rwU.UnlockContext},
		{name: "RWMutex.RUnlock", runs: rwR.RUnlock},
		{name: "RWMutex.RUnlockContext", err: rwRU.RUnlockContext},
		{name: "RWMutex.ForceUnlock", err: tryErr(rw.ForceUnlock)},
		{name: "RWMutex.IsLocked", err: tryErr(rw.IsLocked)},
		{name: "RWMutex.TTL", err: valueErr(rw.TTL)},

		{name: "FairMutex.Lock", dies: fair.Lock},
		{name: "FairMutex.LockContext", err: fair.LockContext},
		{name: "FairMutex.TryLock", no: fair.TryLock},
		{name: "FairMutex.TryLockContext", err: tryErr(fair.TryLockContext)},
		{name: "FairMutex.Unlock", runs: fair.Unlock},
		{name: "FairMutex.UnlockContext", err: fairU.UnlockContext},
		{name: "FairMutex.ForceUnlock", err: tryErr(fair.ForceUnlock)},
		{name: "FairMutex.HoldCount", err: valueErr(fair.HoldCount)},
		{name: "FairMutex.IsLocked", err: tryErr(fair.IsLocked)},
		{name: "FairMutex.TTL", err: valueErr(fair.TTL)},

		{name: "RedissonFairMutex.Lock", dies: rfair.Lock},
		{name: "RedissonFairMutex.LockContext", err: rfair.LockContext},
		{name: "RedissonFairMutex.TryLock", no: rfair.TryLock},
		{name: "RedissonFairMutex.TryLockContext", err: tryErr(rfair.TryLockContext)},
		{name: "RedissonFairMutex.Unlock", runs: rfair.Unlock},
		{name: "RedissonFairMutex.UnlockContext", err: rfairU.UnlockContext},
		{name: "RedissonFairMutex.ForceUnlock", err: tryErr(rfair.ForceUnlock)},
		{name: "RedissonFairMutex.HoldCount", err: valueErr(rfair.HoldCount)},
		{name: "RedissonFairMutex.IsLocked", err: tryErr(rfair.IsLocked)},
		{name: "RedissonFairMutex.TTL", err: valueErr(rfair.TTL)},

		{name: "MultiMutex.Lock", dies: multi.Lock},
		{name: "MultiMutex.LockContext", err: multi.LockContext},
		{name: "MultiMutex.TryLock", no: multi.TryLock},
		{name: "MultiMutex.TryLockContext", err: tryErr(multi.TryLockContext)},
		{name: "MultiMutex.Unlock", runs: multi.Unlock},
		{name: "MultiMutex.UnlockContext", err: multiU.UnlockContext},

		{name: "Fence.Set", err: func(ctx context.Context) error { return fence.Set(ctx, 6, "w") }},
		{name: "Fence.Get", err: func(ctx context.Context) error {
			_, _, err := fence.Get(ctx)
			return err
		}},

		{name: "Semaphore.Acquire", err: func(ctx context.Context) error { return sem.Acquire(ctx, 1) }},
		{name: "Semaphore.Acquire beyond its size", err: func(ctx context.Context) error { return sem.Acquire(ctx, 4) }},
		{name: "Semaphore.TryAcquire", no: func() bool { return sem.TryAcquire(1) }},
		{name: "Semaphore.Release", runs: func() { sem.Release(2) }},
		{name: "Semaphore.ForceUnlock", err: tryErr(sem.ForceUnlock)},
		{name: "Semaphore.IsLocked", err: tryErr(sem.IsLocked)},
		{name: "Semaphore.TTL", err: valueErr(sem.TTL)},

		{name: "CountingSemaphore.Acquire", err: func(ctx context.Context) error { return csem.Acquire(ctx, 1) }},
		{name: "CountingSemaphore.TryAcquire", no: func() bool { return csem.TryAcquire(1) }},
		{name: "CountingSemaphore.Release", runs: func() { csem.Release(2) }},
		{name: "CountingSemaphore.Available", err: valueErr(csem.Available)},

		{name: "ExpirableSemaphore.Acquire", err: func(ctx context.Context) error {
			_, err := xsem.Acquire(ctx, time.Minute)
			return err
		}},
		{name: "ExpirableSemaphore.AcquireN", err: func(ctx context.Context) error {
			_, err := xsem.AcquireN(ctx, 1, time.Minute)
			return err
		}},
		{name: "ExpirableSemaphore.TryAcquire", no: func() bool {
			_, ok := xsem.TryAcquire(time.Minute)
			return ok
		}},
		{name: "ExpirableSemaphore.TryAcquireN", no: func() bool {
			_, ok := xsem.TryAcquireN(1, time.Minute)
			return ok
		}},
		{name: "ExpirableSemaphore.Renew", err: func(ctx context.Context) error { return xsem.Renew(ctx, ids[0], time.Hour) }},
		{name: "ExpirableSemaphore.Release", err: func(ctx context.Context) error { return xsem.Release(ctx, ids...) }},
		{name: "ExpirableSemaphore.Available", err: valueErr(xsem.Available)},

		{name: "Once.Do", err: func(ctx context.Context) error {
			return once.Do(ctx, func(context.Context) error {
				t.Error("Once.Do ran its function on a closed Client")
				return nil
			})
		}},
		{name: "Once.IsDone", err: tryErr(once.IsDone)},
		{name: "Once.Reset", err: once.Reset},
		{name: "Once.ForceUnlock", err: tryErr(once.ForceUnlock)},
		{name: "Once.IsLocked", err: tryErr(once.IsLocked)},
		{name: "Once.TTL", err: valueErr(once.TTL)},

		{name: "WaitGroup.Add", err: func(ctx context.Context) error { return wg.Add(ctx, 1) }},
		{name: "WaitGroup.Done", err: wg.Done},
		{name: "WaitGroup.Wait", err: wg.Wait},
		{name: "WaitGroup.Count", err: valueErr(wg.Count)},

		{name: "Election.Campaign", err: func(ctx context.Context) error { return c.NewElection(name("e2")).Campaign(ctx, "x") }},
		{name: "Election.Campaign by the leader", err: func(ctx context.Context) error { return e.Campaign(ctx, "again") }},
		{name: "Election.Proclaim", err: func(ctx context.Context) error { return e.Proclaim(ctx, "new") }},
		{name: "Election.Resign", err: eR.Resign},
		{name: "Election.Leader", err: valueErr(e.Leader)},
		{name: "Election.ForceUnlock", err: tryErr(e.ForceUnlock)},
		{name: "Election.Observe", no: func() bool {
			_, open := <-e.Observe(ctx)
			return open
		}},
	}
	for _, call := range calls {
		t.Run(call.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			switch {
			case call.err != nil:
				assert.ErrorIs(t, call.err(ctx), redisync.ErrClosed)
			case call.no != nil:
				assert.False(t, call.no())
			case call.dies != nil:
				assert.Contains(t, panicOf(call.dies), "on a closed Client")
			case call.runs != nil:
				assert.NotPanics(t, call.runs)
			}
		})
	}
	assert.Equal(t, before, snapshot(ctx, t, rc, base), "a call on a closed Client changed Redis")
}

// tryErr drops the bool of a call that reports one with its error.
func tryErr(f func(context.Context) (bool, error)) func(context.Context) error { return valueErr(f) }

// valueErr drops the value of a call that returns one with its error.
func valueErr[T any](f func(context.Context) (T, error)) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := f(ctx)
		return err
	}
}

// panicOf runs f and returns the text of its panic, "" if it returned.
func panicOf(f func()) (text string) {
	defer func() {
		if v := recover(); v != nil {
			text = fmt.Sprint(v)
		}
	}()
	f()
	return ""
}

// snapshot returns every key whose name contains part, with its type and
// value (without its expiry). It reads each type with its own command, not
// DUMP, which miniredis answers for strings only.
func snapshot(ctx context.Context, t *testing.T, rc rueidis.Client, part string) map[string]string {
	t.Helper()
	keys := map[string]string{}
	var cursor uint64
	for {
		entry, err := rc.Do(ctx, rc.B().Scan().Cursor(cursor).Match("*"+part+"*").Count(1000).Build()).AsScanEntry()
		require.NoError(t, err)
		for _, k := range entry.Elements {
			if v, ok := valueOf(ctx, t, rc, k); ok {
				keys[k] = v
			}
		}
		if cursor = entry.Cursor; cursor == 0 {
			return keys
		}
	}
}

// valueOf returns key's type and value as text, and false if it is gone.
func valueOf(ctx context.Context, t *testing.T, rc rueidis.Client, key string) (string, bool) {
	t.Helper()
	kind, err := rc.Do(ctx, rc.B().Type().Key(key).Build()).ToString()
	require.NoError(t, err)
	var cmd rueidis.Completed
	switch kind {
	case "none":
		return "", false
	case "string":
		cmd = rc.B().Get().Key(key).Build()
	case "hash":
		cmd = rc.B().Hgetall().Key(key).Build()
	case "zset":
		cmd = rc.B().Zrange().Key(key).Min("0").Max("-1").Withscores().Build()
	case "list":
		cmd = rc.B().Lrange().Key(key).Start(0).Stop(-1).Build()
	case "set":
		cmd = rc.B().Smembers().Key(key).Build()
	default:
		t.Fatalf("key %q has a type the snapshot cannot read: %s", key, kind)
	}
	v, err := rc.Do(ctx, cmd).ToAny()
	if rueidis.IsRedisNil(err) {
		return "", false
	}
	require.NoError(t, err)
	if m, ok := v.(map[string]any); ok { // a hash: in a stable order
		names := make([]string, 0, len(m))
		for f := range m {
			names = append(names, f)
		}
		sort.Strings(names)
		pairs := make([]string, 0, 2*len(names))
		for _, f := range names {
			pairs = append(pairs, f, fmt.Sprint(m[f]))
		}
		v = pairs
	}
	if kind == "set" {
		if members, ok := v.([]any); ok {
			s := make([]string, len(members))
			for i, m := range members {
				s[i] = fmt.Sprint(m)
			}
			sort.Strings(s)
			v = s
		}
	}
	return kind + " " + fmt.Sprint(v), true
}

// Close ends what its Client's calls wait for and hold: a Lock waiting on
// another Client's hold returns ErrClosed, a hold's Err says ErrClosed, and
// its handle then behaves as on a closed Client (see TestClosedClient).
func TestCloseEndsWaitingCallsAndHolds(t *testing.T) {
	forEachTopology(t, testCloseEndsWaitingCallsAndHolds)
}

func testCloseEndsWaitingCallsAndHolds(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	c, _ := newClient(t, tg)
	m := c.NewMutex(name)
	m.Lock()
	other, _ := newClient(t, tg)
	waiting := make(chan error, 1)
	w := other.NewMutex(name)
	go func() { waiting <- w.LockContext(context.Background()) }()
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, other.Close())
	assert.ErrorIs(t, <-waiting, redisync.ErrClosed)
	require.NoError(t, c.Close())
	assert.ErrorIs(t, m.Err(), redisync.ErrClosed)
	assert.NotPanics(t, m.Unlock)
	assert.PanicsWithValue(t, fmt.Sprintf("redisync: Lock of %q on a closed Client", name), m.Lock)
	ok, err := m.TryLockContext(context.Background())
	assert.False(t, ok)
	assert.True(t, errors.Is(err, redisync.ErrClosed))
}
