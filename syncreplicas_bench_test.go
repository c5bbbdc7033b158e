package redisync_test

import (
	"testing"
	"time"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/redisserver"
)

// BenchmarkSyncReplicas measures what WithSyncReplicas costs: Lock and
// Unlock of a Mutex, one goroutine, on a primary with one replica behind
// Sentinel (all on loopback), without the option and waiting for every
// connected replica.
//
// Run with: go test -run '^$' -bench SyncReplicas -benchmem
func BenchmarkSyncReplicas(b *testing.B) {
	tg, err := redisserver.StartSentinelTarget()
	if err != nil {
		b.Skip(err)
	}
	b.Cleanup(func() { _ = tg.Stop() })
	for _, bc := range []struct {
		name string
		opts []redisync.Option
	}{
		{"off", nil},
		{"every-replica", []redisync.Option{redisync.WithSyncReplicas(-1, time.Second)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c, _ := newClient(b, tg, bc.opts...)
			m := c.NewMutex(b.Name())
			b.ReportAllocs()
			for b.Loop() {
				if err := m.LockContext(b.Context()); err != nil {
					b.Fatal(err)
				}
				if err := m.UnlockContext(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
