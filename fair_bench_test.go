package redisync_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redisync/redisync"
)

// BenchmarkFairMutex measures a FairMutex against the test's redis-server on
// loopback:
//
//   - serial: Lock+Unlock by one goroutine, no queue;
//   - contended: four Clients (their own connections, as four processes
//     would have) and GOMAXPROCS*4 goroutines on one name, every Lock
//     queueing: the time per handover, also reported as handovers/s;
//   - handover: the time from the start of Unlock in one Client until the
//     queued head in another Client holds the lock, as percentiles.
//
// Run with: go test -run '^$' -bench FairMutex -benchmem
func BenchmarkFairMutex(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		c, _ := newClient(b, standalone)
		fm := c.NewFairMutex(b.Name())
		b.ReportAllocs()
		for b.Loop() {
			fm.Lock()
			//lint:ignore SA2001 the Lock+Unlock pair is what is measured
			fm.Unlock()
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
			fm := clients[next.Add(1)%4].NewFairMutex(b.Name())
			for pb.Next() {
				fm.Lock()
				//lint:ignore SA2001 the Lock+Unlock pair is what is measured
				fm.Unlock()
			}
		})
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "handovers/s")
	})
	b.Run("handover", func(b *testing.B) {
		holder, _ := newClient(b, standalone)
		waiter, _ := newClient(b, standalone)
		h, w := holder.NewFairMutex(b.Name()), waiter.NewFairMutex(b.Name())
		handovers := make([]time.Duration, 0, b.N)
		acquired := make(chan time.Time)
		for b.Loop() {
			h.Lock()
			go func() {
				if err := w.LockContext(context.Background()); err != nil {
					b.Error(err)
				}
				acquired <- time.Now()
				w.Unlock()
			}()
			time.Sleep(time.Millisecond) // let the waiter queue
			released := time.Now()
			h.Unlock()
			handovers = append(handovers, (<-acquired).Sub(released))
		}
		reportLatencies(b, handovers)
	})
}
