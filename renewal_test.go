package redisync_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
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
	for i := range mutexes {
		mutexes[i] = c.NewMutex(fmt.Sprintf("%s-%d", t.Name(), i))
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
