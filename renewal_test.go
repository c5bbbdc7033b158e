package redisync_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/faultproxy"
	"github.com/go-redisync/redisync/internal/redistest"
)

// 1000 watchdog locks held by one Client are renewed in batches of 100: at
// most 10 renewal calls per renewal interval.
func TestRenewalBatching(t *testing.T) {
	requireReal(t, standalone, "INFO commandstats")
	const (
		locks    = 1000
		watchdog = 3 * time.Second // renewed every second
		interval = watchdog / 3
		window   = 3 * interval
	)
	c, rc := newClient(t, standalone, redisync.WithWatchdogTimeout(watchdog))
	mutexes := make([]*redisync.Mutex, locks)
	var wg sync.WaitGroup
	base := freshName(t)
	for i := range mutexes {
		mutexes[i] = c.NewMutex(fmt.Sprintf("%s-%d", base, i))
		wg.Go(mutexes[i].Lock)
	}
	wg.Wait()
	defer func() {
		for _, m := range mutexes {
			m.Unlock()
		}
	}()
	time.Sleep(interval + interval/2) // the leases fall into step at their first renewal
	before := redistest.CommandCalls(t, rc, "evalsha")
	time.Sleep(window)
	calls := redistest.CommandCalls(t, rc, "evalsha") - before
	// A window of three intervals sees three renewal rounds, or four when it
	// starts just before one.
	t.Logf("%d renewal calls for %d locks over %v (%v per renewal interval)", calls, locks, window, interval)
	assert.LessOrEqual(t, calls, int64(4*locks/100))
	assert.GreaterOrEqual(t, calls, int64(2*locks/100), "the locks were not renewed")
	for _, m := range mutexes[:10] {
		require.NoError(t, m.Err())
		ttl, err := m.TTL(context.Background())
		require.NoError(t, err)
		assert.Greater(t, ttl, interval, "lease of a renewed lock")
	}
}

// A holder whose link to Redis goes silent (every byte swallowed) while the
// service keeps using the same rueidis client, with a longer deadline of its
// own, is told of its loss before a rival gets the lock: the lease's deadline
// is reported by the Client's own clock, whatever the renewal call waits for
// in rueidis (a reconnection that follows the other caller's deadline). It
// was told 4 s after the cut, 3 s after the rival got in.
func TestCutOffHolderIsToldBeforeARival(t *testing.T) {
	requireReal(t, standalone, "a server behind a proxy")
	proxy, err := faultproxy.Start(standalone.Addrs[0])
	require.NoError(t, err)
	defer proxy.Close()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{proxy.Addr()}, DisableCache: true})
	require.NoError(t, err)
	defer rc.Close()
	const lease = time.Second
	c, err := redisync.New(rc, redisync.WithWatchdogTimeout(lease), redisync.WithLogger(testLogger(t)))
	require.NoError(t, err)
	defer func() { _ = c.Close() }()
	other, _ := newClient(t, standalone)
	name := t.Name() + uniqueSuffix()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	m := c.NewMutex(name)
	require.NoError(t, m.LockContext(ctx))
	time.Sleep(lease / 2)                  // a renewal or two went through
	proxy.Blackhole(faultproxy.Both, true) // new connections are accepted and swallowed
	proxy.ResetAll()                       // the open ones break: rueidis connects again
	cut := time.Now()
	stop := make(chan struct{})
	var service sync.WaitGroup
	service.Go(func() { // the service's own commands, 4 s deadline each
		for {
			select {
			case <-stop:
				return
			default:
			}
			sctx, scancel := context.WithTimeout(context.Background(), 4*time.Second)
			// Pinned: rueidis retries a read on a new connection when
			// the one that wrote it breaks, and puts the command back in
			// its pool after the retry's answer, with nothing ordering
			// that after the dead connection's writer read it; -race
			// reported it against the next command built from the pool
			// (rueidis v1.0.79, here: a Client's Close).
			_ = rc.Do(sctx, rc.B().Get().Key(name+":data").Build().Pin()).Error()
			scancel()
		}
	})
	defer func() {
		close(stop)
		proxy.Blackhole(faultproxy.Both, false)
		service.Wait()
	}()
	told := make(chan time.Time, 1)
	go func() {
		<-m.Done()
		told <- time.Now()
	}()
	rival := other.NewMutex(name)
	require.NoError(t, rival.LockContext(ctx))
	in := time.Now()
	select {
	case at := <-told:
		t.Logf("told %v after the cut, the rival got in %v after it", at.Sub(cut), in.Sub(cut))
		assert.False(t, at.After(in), "the holder was told %v after the rival got in", at.Sub(in))
		assert.ErrorIs(t, m.Err(), redisync.ErrLockLost)
	case <-time.After(10 * time.Second):
		t.Fatal("the holder was never told")
	}
	require.NoError(t, rival.UnlockContext(ctx))
}
