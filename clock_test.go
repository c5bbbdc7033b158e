package redisync_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redisserver"
)

// skewed starts a redis-server whose wall clock the test steps, and returns
// it with a rueidis client on it; both end with the test.
func skewed(t *testing.T) (*redisserver.SkewedServer, rueidis.ClientOption) {
	t.Helper()
	requireReal(t, standalone, "a clock to step")
	srv, err := redisserver.StartSkewed()
	if errors.Is(err, redisserver.ErrNoCompiler) {
		t.Skip(err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Stop() })
	return srv, rueidis.ClientOption{InitAddress: []string{srv.Addr}, DisableCache: true, ForceSingleClient: true,
		AlwaysPipelining: true}
}

// The server's clock jumps forward past the leases: Redis expires the locks
// at once, so a second holder gets in while the first still runs (an
// exclusion failure that leases cannot prevent). What holds: the first
// holders are told at their next renewal, and the fence rejects the first
// FencedMutex holder's writes.
func TestClockStepForward(t *testing.T) {
	srv, opt := skewed(t)
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	first := clientOn(t, opt, redisync.WithWatchdogTimeout(3*time.Second))
	second := clientOn(t, opt)
	name := t.Name()

	fm := first.NewFencedMutex(name)
	old, err := fm.LockToken(ctx)
	require.NoError(t, err)
	fence := second.NewFence(name)
	require.NoError(t, fence.Set(ctx, old, "first"))
	s := first.NewSemaphore(name, 1)
	require.NoError(t, s.Acquire(ctx, 1))

	require.NoError(t, srv.Step(time.Minute))
	stepped := time.Now()
	next, err := second.NewFencedMutex(name).LockToken(ctx)
	require.NoError(t, err, "the lock expired with the step: a second holder gets in")
	assert.Greater(t, next, old, "tokens still increase")
	require.NoError(t, second.NewSemaphore(name, 1).Acquire(ctx, 1), "the permit's lease lapsed with the step")

	for what, done := range map[string]<-chan struct{}{"FencedMutex": fm.Done(), "Semaphore": s.Done()} {
		select {
		case <-done:
			t.Logf("%s holder told %v after the step", what, time.Since(stepped))
		case <-ctx.Done():
			t.Fatalf("the %s holder was never told", what)
		}
	}
	assert.ErrorIs(t, fm.Err(), redisync.ErrLockLost)
	assert.ErrorIs(t, s.Err(), redisync.ErrLockLost)
	require.NoError(t, fence.Set(ctx, next, "second"))
	assert.ErrorIs(t, fence.Set(ctx, old, "stale"), redisync.ErrStaleToken, "the fence rejects the first holder")
	fm.Unlock()
	s.Release(1)
}

// The server's clock steps back: tokens keep increasing while their counter
// lives, and a lock outlives its lease by the step (safe: its Go holder
// counts its lease on its own monotonic clock and stops at the lease). What
// does not hold: a step back combined with the loss of the counter can grant
// a lower token (the documented limit).
func TestClockStepBackward(t *testing.T) {
	srv, opt := skewed(t)
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	c := clientOn(t, opt)
	name := t.Name()
	fm := c.NewFencedMutex(name)
	before, err := fm.LockToken(ctx)
	require.NoError(t, err)
	fm.Unlock()

	require.NoError(t, srv.Step(-time.Hour))
	after, err := fm.LockToken(ctx)
	require.NoError(t, err)
	assert.Greater(t, after, before, "the counter keeps tokens increasing across a step back")
	fm.Unlock()

	m := c.NewMutex(name+":lease", redisync.WithLease(time.Second))
	require.NoError(t, m.LockContext(ctx))
	require.NoError(t, srv.Step(-2*time.Hour))
	pttl := pttlOf(t, clientRC(t, opt), name+":lease")
	assert.Greater(t, pttl, 30*time.Minute, "Redis now keeps the lock an hour longer than its lease")
	select {
	case <-m.Done():
		assert.ErrorIs(t, m.Err(), redisync.ErrLeaseExpired, "the holder stops at its own lease")
	case <-ctx.Done():
		t.Fatal("the holder kept believing in a lease that ran out")
	}
	m.Unlock()

	rc := clientRC(t, opt)
	require.NoError(t, rc.Do(ctx, rc.B().Del().Key(layout.MutexOf(name).Token).Build()).Error())
	lost, err := fm.LockToken(ctx)
	require.NoError(t, err)
	fm.Unlock()
	t.Logf("tokens: %d before the steps, %d after one hour back, %d after two hours back and the counter lost", before, after, lost)
	assert.Less(t, lost, after, "the documented limit: a clock stepped back and a lost counter give a lower token")
}

// clientRC is a plain rueidis client on opt's server.
func clientRC(t *testing.T, opt rueidis.ClientOption) rueidis.Client {
	t.Helper()
	rc, err := rueidis.NewClient(opt)
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	return rc
}
