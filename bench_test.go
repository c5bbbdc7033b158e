package redisync_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redisync/redisync"
)

// BenchmarkMutex measures a Lock+Unlock pair against the test's redis-server
// on loopback:
//
//   - serial: one goroutine, one name;
//   - parallel: GOMAXPROCS*4 goroutines of one Client, each on its own name;
//   - contended: four Clients (their own connections, as four processes
//     would have) and GOMAXPROCS*4 goroutines on one name;
//   - handover: the time from the start of Unlock in one Client until a
//     waiter in another Client holds the lock, reported as percentiles.
//
// Run with: go test -run '^$' -bench Mutex -benchmem
func BenchmarkMutex(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		c, _ := newClient(b, standalone)
		m := c.NewMutex(b.Name())
		b.ReportAllocs()
		for b.Loop() {
			m.Lock()
			//lint:ignore SA2001 the Lock+Unlock pair is what is measured
			m.Unlock()
		}
	})
	b.Run("parallel", func(b *testing.B) {
		c, _ := newClient(b, standalone)
		var next atomic.Int64
		b.ReportAllocs()
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			m := c.NewMutex(fmt.Sprintf("%s-%d", b.Name(), next.Add(1)))
			for pb.Next() {
				m.Lock()
				//lint:ignore SA2001 the Lock+Unlock pair is what is measured
				m.Unlock()
			}
		})
	})
	b.Run("contended", func(b *testing.B) {
		clients := make([]*redisync.Client, 4)
		for i := range clients {
			clients[i], _ = newClient(b, standalone)
		}
		var next atomic.Int64
		b.ReportAllocs()
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			m := clients[next.Add(1)%4].NewMutex(b.Name())
			for pb.Next() {
				m.Lock()
				//lint:ignore SA2001 the Lock+Unlock pair is what is measured
				m.Unlock()
			}
		})
	})
	b.Run("handover", func(b *testing.B) {
		holder, _ := newClient(b, standalone)
		waiter, _ := newClient(b, standalone)
		h, w := holder.NewMutex(b.Name()), waiter.NewMutex(b.Name())
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
			time.Sleep(time.Millisecond) // let the waiter wait
			released := time.Now()
			h.Unlock()
			handovers = append(handovers, (<-acquired).Sub(released))
		}
		reportLatencies(b, handovers)
	})
}

// BenchmarkFencedMutex measures LockToken+Unlock (one goroutine) and the same
// from GOMAXPROCS*4 goroutines of one Client, each on its own name.
func BenchmarkFencedMutex(b *testing.B) {
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		c, _ := newClient(b, standalone)
		m := c.NewFencedMutex(b.Name())
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.LockToken(ctx); err != nil {
				b.Fatal(err)
			}
			m.Unlock()
		}
	})
	b.Run("parallel", func(b *testing.B) {
		c, _ := newClient(b, standalone)
		var next atomic.Int64
		b.ReportAllocs()
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			m := c.NewFencedMutex(fmt.Sprintf("%s-%d", b.Name(), next.Add(1)))
			for pb.Next() {
				if _, err := m.LockToken(ctx); err != nil {
					b.Error(err)
					return
				}
				m.Unlock()
			}
		})
	})
}

// BenchmarkMutexSharedHandle measures Lock+Unlock from 16 goroutines sharing
// one handle (one owner): the local handovers' path.
func BenchmarkMutexSharedHandle(b *testing.B) {
	c, _ := newClient(b, standalone)
	m := c.NewMutex(b.Name())
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Lock()
			//lint:ignore SA2001 the Lock+Unlock pair is what is measured
			m.Unlock()
		}
	})
}

// reportLatencies reports the median and the 99th percentile of lags, in µs.
func reportLatencies(b *testing.B, lags []time.Duration) {
	slices.Sort(lags)
	pct := func(p int) float64 { return float64(lags[len(lags)*p/100].Microseconds()) }
	b.ReportMetric(pct(50), "p50-µs")
	b.ReportMetric(pct(99), "p99-µs")
}
