package redisync_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redisync/redisync"
)

// BenchmarkSemaphore measures a Semaphore against the test's redis-server on
// loopback:
//
//   - serial: Acquire(1)+Release(1) by one goroutine, no queue;
//   - contended: four Clients and GOMAXPROCS*4 goroutines acquiring 1 of a
//     size-2 semaphore (most Acquires queue), reported also as acquisitions/s.
//
// Run with: go test -run '^$' -bench Semaphore -benchmem
func BenchmarkSemaphore(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		c, _ := newClient(b, standalone)
		s := c.NewSemaphore(b.Name(), 2)
		ctx := b.Context()
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Acquire(ctx, 1); err != nil {
				b.Fatal(err)
			}
			s.Release(1)
		}
	})
	b.Run("contended", func(b *testing.B) {
		clients := make([]*redisync.Client, 4)
		for i := range clients {
			clients[i], _ = newClient(b, standalone)
		}
		var next atomic.Int64
		b.ReportAllocs()
		b.SetParallelism(4)
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			s := clients[next.Add(1)%4].NewSemaphore(b.Name(), 2)
			for pb.Next() {
				if err := s.Acquire(b.Context(), 1); err != nil {
					b.Error(err)
					return
				}
				s.Release(1)
			}
		})
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "acquisitions/s")
	})
}
