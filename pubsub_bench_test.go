package redisync_test

import (
	"testing"
	"time"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/redisserver"
)

// BenchmarkPubSubMode measures, on a 3-master cluster started by the
// benchmark, a Mutex handover between two Clients (the holder's Unlock to the
// waiter's return, p50 and p99 in µs) with sharded Pub/Sub, the default, and
// with classic Pub/Sub (WithShardedPubSub(false)), whose messages every node
// relays to every other.
//
// Run with: go test -run '^$' -bench PubSubMode -benchmem
func BenchmarkPubSubMode(b *testing.B) {
	tg, err := redisserver.StartClusterTarget(3, 0)
	if err != nil {
		b.Skip(err)
	}
	b.Cleanup(func() { _ = tg.Stop() })
	for _, bc := range []struct {
		name    string
		sharded bool
	}{{"sharded", true}, {"classic", false}} {
		b.Run(bc.name, func(b *testing.B) {
			a, _ := newClient(b, tg, redisync.WithShardedPubSub(bc.sharded))
			w, _ := newClient(b, tg, redisync.WithShardedPubSub(bc.sharded))
			holder, waiter := a.NewMutex(b.Name()), w.NewMutex(b.Name())
			var lags []time.Duration
			for b.Loop() {
				if err := holder.LockContext(b.Context()); err != nil {
					b.Fatal(err)
				}
				locked := make(chan time.Time, 1)
				go func() {
					if err := waiter.LockContext(b.Context()); err != nil {
						b.Error(err)
					}
					locked <- time.Now()
				}()
				time.Sleep(time.Millisecond) // the waiter waits
				released := time.Now()
				holder.Unlock()
				lags = append(lags, (<-locked).Sub(released))
				waiter.Unlock()
			}
			reportLatencies(b, lags)
		})
	}
}
