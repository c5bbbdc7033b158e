package redisynctest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/redisserver"
	"github.com/go-redisync/redisync/redisynctest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// hang bounds a wait that only a hang would exceed.
const hang = 10 * time.Second

// servers runs f on a real redis-server (skipped, saying why, when none is
// installed) and on the in-process fallback.
func servers(t *testing.T, f func(t *testing.T)) {
	t.Run("redis-server", func(t *testing.T) {
		if _, err := redisserver.ServerBinary(); err != nil {
			if redisserver.RequireServer() {
				t.Fatal(err)
			}
			t.Skip(err)
		}
		f(t)
	})
	t.Run("in-process", func(t *testing.T) {
		t.Setenv("REDIS_SERVER_BIN", "/nonexistent")
		t.Setenv("REDISYNC_REQUIRE_SERVER", "")
		f(t)
	})
}

// A Client of New locks for real: a second Client, as another process,
// finds the lock taken, and the raw client sees its key.
func TestNew(t *testing.T) {
	servers(t, func(t *testing.T) {
		ctx := context.Background()
		c := redisynctest.New(t)
		m := c.NewMutex("orders:1")
		require.NoError(t, m.LockContext(ctx))
		other := redisynctest.Another(t, c).NewMutex("orders:1")
		ok, err := other.TryLockContext(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "held by the first Client")
		rc := redisynctest.Rueidis(t, c)
		n, err := rc.Do(ctx, rc.B().Exists().Key("orders:1").Build()).AsInt64()
		require.NoError(t, err)
		assert.EqualValues(t, 1, n, "the lock's key, seen through the raw client")
		m.Unlock()
		ok, err = other.TryLockContext(ctx)
		require.NoError(t, err)
		assert.True(t, ok, "free once unlocked")
		other.Unlock()
	})
}

// Two tests on a shared server, each in its own database: equal names are
// two locks.
func TestShared(t *testing.T) {
	servers(t, func(t *testing.T) {
		ctx := context.Background()
		a := redisynctest.New(t, redisynctest.Shared())
		b := redisynctest.New(t, redisynctest.Shared())
		ma, mb := a.NewMutex("jobs"), b.NewMutex("jobs")
		require.NoError(t, ma.LockContext(ctx))
		ok, err := mb.TryLockContext(ctx)
		require.NoError(t, err)
		assert.True(t, ok, "another test's lock of the same name")
		ma.Unlock()
		ra, rb := redisynctest.Rueidis(t, a), redisynctest.Rueidis(t, b)
		na, err := ra.Do(ctx, ra.B().Exists().Key("jobs").Build()).AsInt64()
		require.NoError(t, err)
		nb, err := rb.Do(ctx, rb.B().Exists().Key("jobs").Build()).AsInt64()
		require.NoError(t, err)
		assert.Equal(t, [2]int64{0, 1}, [2]int64{na, nb}, "each test's keys in its own database")
		mb.Unlock()
	})
}

// Vanish takes every hold away; the holder is told at its next renewal and
// another Client takes the lock at once.
func TestVanish(t *testing.T) {
	servers(t, func(t *testing.T) {
		ctx := context.Background()
		c := redisynctest.New(t, redisynctest.WithOptions(redisync.WithWatchdogTimeout(900*time.Millisecond)))
		m := c.NewMutex("payments:7")
		require.NoError(t, m.LockContext(ctx))
		redisynctest.Vanish(t, c)
		other := redisynctest.Another(t, c).NewMutex("payments:7")
		ok, err := other.TryLockContext(ctx)
		require.NoError(t, err)
		assert.True(t, ok, "the lock vanished")
		select {
		case <-m.Done():
		case <-time.After(hang):
			t.Fatal("the holder was not told")
		}
		assert.ErrorIs(t, m.Err(), redisync.ErrLockLost)
		assert.ErrorIs(t, m.Err(), redisync.ErrHoldGone)
		m.Unlock() // a lost hold's Unlock does not panic
		other.Unlock()
	})
}

// PauseRenewals lets the lease run out: another Client gets the lock, and
// the paused holder is told by its own clock, before it is resumed.
func TestPauseRenewals(t *testing.T) {
	servers(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), hang)
		defer cancel()
		c := redisynctest.New(t, redisynctest.WithOptions(redisync.WithWatchdogTimeout(900*time.Millisecond)))
		m := c.NewMutex("migration")
		require.NoError(t, m.LockContext(ctx))
		resume := redisynctest.PauseRenewals(t, c)
		other := redisynctest.Another(t, c).NewMutex("migration")
		require.NoError(t, other.LockContext(ctx), "taken once the paused holder's lease ran out")
		select {
		case <-m.Done():
		case <-ctx.Done():
			t.Fatal("the paused holder was not told")
		}
		assert.True(t, errors.Is(m.Err(), redisync.ErrLeaseExpired), "told by its own clock: %v", m.Err())
		resume()
		m.Unlock()
		held, err := other.IsLocked(ctx)
		require.NoError(t, err)
		assert.True(t, held, "the paused holder's late commands did not free the new holder's lock")
		other.Unlock()
	})
}

// Parallel tests on the shared server each have their own lock of an equal
// name, all held at once.
func TestSharedParallel(t *testing.T) {
	for i := range 4 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			m := redisynctest.New(t, redisynctest.Shared()).NewMutex("report")
			ok, err := m.TryLockContext(ctx)
			require.NoError(t, err)
			require.True(t, ok, "no other test's lock")
			time.Sleep(100 * time.Millisecond) // the others take theirs meanwhile
			m.Unlock()
		})
	}
}
