package redisync_test

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redisserver"
)

// grant is one acquisition seen by a client: when its LockToken began, when
// it returned, and the token.
type grant struct {
	began, done time.Time
	token       uint64
}

// checkGrants fails unless all tokens are distinct and each is greater than
// every token whose grant completed before its own acquire began.
func checkGrants(t *testing.T, grants []grant) {
	t.Helper()
	seen := make(map[uint64]bool, len(grants))
	for _, g := range grants {
		require.False(t, seen[g.token], "token %d granted twice", g.token)
		seen[g.token] = true
	}
	byDone := slices.Clone(grants)
	slices.SortFunc(byDone, func(a, b grant) int { return a.done.Compare(b.done) })
	prefixMax := make([]uint64, len(byDone)) // highest token among byDone[:i+1]
	for i, g := range byDone {
		prefixMax[i] = g.token
		if i > 0 {
			prefixMax[i] = max(prefixMax[i], prefixMax[i-1])
		}
	}
	for _, g := range grants {
		// Grants completed strictly before g began.
		n, _ := slices.BinarySearchFunc(byDone, g.began, func(x grant, t time.Time) int { return x.done.Compare(t) })
		if n > 0 {
			require.Greater(t, g.token, prefixMax[n-1], "token granted after a higher one had completed")
		}
	}
}

func fencedHammer(t *testing.T, tg *redisserver.Target, name string, clients, goroutines, rounds int) []grant {
	var mu sync.Mutex
	var grants []grant
	var wg sync.WaitGroup
	for range clients {
		c, _ := newClient(t, tg)
		for range goroutines {
			m := c.NewFencedMutex(name)
			wg.Go(func() {
				for range rounds {
					began := time.Now()
					token, err := m.LockToken(context.Background())
					if err != nil {
						t.Error(err)
						return
					}
					done := time.Now()
					assert.Equal(t, token, m.Token())
					m.Unlock()
					mu.Lock()
					grants = append(grants, grant{began: began, done: done, token: token})
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	return grants
}

func TestFencedMutexTokensIncrease(t *testing.T) {
	t.Parallel() // waits for leases to run out: see redistest.Parallel
	forEachTopologyAtOnce(t, testFencedMutexTokensIncrease)
}

func testFencedMutexTokensIncrease(t *testing.T, tg *redisserver.Target) {
	rounds := scaled(tg, 200)
	name := freshName(t)
	grants := fencedHammer(t, tg, name, 4, 8, rounds)
	require.Len(t, grants, 4*8*rounds)
	checkGrants(t, grants)
}

func TestFencedMutexTokenLifecycle(t *testing.T) { forEachTopology(t, testFencedMutexTokenLifecycle) }

func testFencedMutexTokenLifecycle(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	c, _ := newClient(t, tg)
	fm := c.NewFencedMutex(name)
	assert.Zero(t, fm.Token(), "not held")
	owner := redisync.WithOwner(context.Background())
	t1, err := fm.LockToken(owner)
	require.NoError(t, err)
	t2, err := fm.LockToken(owner)
	require.NoError(t, err)
	assert.Greater(t, t2, t1, "a reentrant acquisition gets a new token too")
	assert.Equal(t, t2, fm.Token())
	_, ok, err := c.NewFencedMutex(name).TryLockToken(context.Background())
	require.NoError(t, err)
	assert.False(t, ok, "another owner is excluded")
	require.NoError(t, fm.UnlockContext(owner))
	require.NoError(t, fm.UnlockContext(owner))
	assert.Zero(t, fm.Token(), "released")
	fm.Lock() // the Mutex methods take tokens too
	assert.Greater(t, fm.Token(), t2)
	fm.Unlock()
}

// Tokens stay increasing when the server forgets the scripts, the counter,
// or everything (a restart without persistence).
func TestFencedMutexTokensSurviveLoss(t *testing.T) {
	tg, err := redisserver.StartStandalone()
	require.NoError(t, err)
	t.Cleanup(func() { _ = tg.Stop() })
	requireReal(t, tg, "restarts")
	name := t.Name()
	tokenKey := layout.Aux(layout.TokenPrefix, name)
	faults := []struct {
		name  string
		fault func(rc rueidis.Client)
	}{
		{"SCRIPT FLUSH", func(rc rueidis.Client) {
			require.NoError(t, rc.Do(context.Background(), rc.B().ScriptFlush().Build()).Error())
		}},
		{"DEL counter", func(rc rueidis.Client) {
			require.NoError(t, rc.Do(context.Background(), rc.B().Del().Key(tokenKey).Build()).Error())
		}},
		{"restart", func(rueidis.Client) { require.NoError(t, tg.Server.Restart()) }},
	}
	last := uint64(0)
	take := func() uint64 {
		c, _ := newClient(t, tg)
		fm := c.NewFencedMutex(name)
		token, err := fm.LockToken(context.Background())
		require.NoError(t, err)
		fm.Unlock()
		require.NoError(t, c.Close())
		return token
	}
	last = take()
	for _, f := range faults {
		rc := newRueidis(t, tg)
		f.fault(rc)
		rc.Close()
		token := take()
		t.Logf("after %s: token %d (before: %d)", f.name, token, last)
		assert.Greater(t, token, last, "token after %s", f.name)
		last = token
	}
}

// A holder whose fixed lease ran out while it slept writes through the fence
// after the next holder did: its write is rejected, the new holder's stands.
func TestFencedMutexStaleHolderIsFenced(t *testing.T) {
	forEachTopology(t, testFencedMutexStaleHolderIsFenced)
}

func testFencedMutexStaleHolderIsFenced(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	a, _ := newClient(t, tg)
	b, _ := newClient(t, tg)
	ctx := context.Background()
	slow := a.NewFencedMutex(name, redisync.WithLease(300*time.Millisecond))
	staleToken, err := slow.LockToken(ctx)
	require.NoError(t, err)
	time.Sleep(500 * time.Millisecond) // a pause past the lease

	next := b.NewFencedMutex(name)
	token, err := next.LockToken(ctx)
	require.NoError(t, err)
	require.Greater(t, token, staleToken)
	require.NoError(t, b.NewFence(name).Set(ctx, token, "written by the new holder"))

	err = a.NewFence(name).Set(ctx, staleToken, "written by the stale holder")
	assert.ErrorIs(t, err, redisync.ErrStaleToken)
	value, seen, err := a.NewFence(name).Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, "written by the new holder", value)
	assert.Equal(t, token, seen)
	assert.ErrorIs(t, slow.Err(), redisync.ErrLockLost, "the stale holder was told")
	require.NoError(t, b.NewFence(name).Set(ctx, token, "again, same token"))
	next.Unlock()
	slow.Unlock()
}

// A Fence compares tokens exactly, however large: past 2^53, where Lua's
// numbers round, a lower token is still refused, up to the largest uint64.
func TestFenceLargeTokens(t *testing.T) {
	c, _ := newClient(t, standalone)
	f := c.NewFence(freshName(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, f.Set(ctx, 1<<60+1, "new"))
	err := f.Set(ctx, 1<<60, "stale")
	assert.ErrorIs(t, err, redisync.ErrStaleToken)
	assert.ErrorContains(t, err, "token 1152921504606846976 is lower than 1152921504606846977")
	require.NoError(t, f.Set(ctx, math.MaxUint64, "max"))
	assert.ErrorIs(t, f.Set(ctx, math.MaxUint64-1, "stale"), redisync.ErrStaleToken)
	assert.ErrorIs(t, f.Set(ctx, 9, "stale"), redisync.ErrStaleToken, "fewer digits")
	value, token, err := f.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, "max", value)
	assert.Equal(t, uint64(math.MaxUint64), token)
}

// redissonFencedAcquire takes a lock the way a Java service using Redisson's
// RFencedLock does: the RLock hash with a counted field, and INCR of the
// token counter. It returns the token, or -1 when the lock is held by another.
const redissonFencedAcquire = `
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
	redis.call('hincrby', KEYS[1], ARGV[2], 1)
	redis.call('pexpire', KEYS[1], ARGV[1])
	return redis.call('incr', KEYS[2])
end
return -1`

func TestFencedMutexRedissonInterop(t *testing.T) {
	c, rc := newClient(t, standalone)
	ctx := context.Background()
	name := freshName(t)
	java := func() int64 {
		n, err := rc.Do(ctx, rc.B().Eval().Script(redissonFencedAcquire).Numkeys(2).
			Key(name, layout.Aux(layout.TokenPrefix, name)).Arg("30000", "0f0e0d0c-java:1").Build()).AsInt64()
		require.NoError(t, err)
		return n
	}
	javaToken := java()
	require.Positive(t, javaToken, "the Java stand-in takes the free lock")
	fm := c.NewFencedMutex(name)
	_, ok, err := fm.TryLockToken(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "a lock held through the RFencedLock layout excludes the Go handle")

	// The Java side releases as Redisson does: delete and publish "0".
	got := make(chan uint64, 1)
	go func() {
		token, err := fm.LockToken(ctx)
		assert.NoError(t, err)
		got <- token
	}()
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, rc.Do(ctx, rc.B().Del().Key(name).Build()).Error())
	require.NoError(t, rc.Do(ctx, rc.B().Publish().Channel(layout.Aux(layout.MutexChannelPrefix, name)).Message("0").Build()).Error())
	select {
	case token := <-got:
		assert.Greater(t, token, uint64(javaToken), "the Go token follows the Java one")
	case <-time.After(hang):
		t.Fatal("the Go waiter was not woken by the Java-style release")
	}
	assert.EqualValues(t, -1, java(), "a lock held by the Go handle excludes the Java stand-in")
	fm.Unlock()
	assert.Positive(t, java())
}
