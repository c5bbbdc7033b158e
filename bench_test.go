package redisync_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/go-redisync/redisync"
)

// BenchmarkMutex measures a Lock+Unlock pair against the test's redis-server
// on loopback:
//
//   - serial: one goroutine, one name;
//   - parallel: GOMAXPROCS*4 goroutines of one Client, each on its own name;
//   - contended: four Clients (their own connections, as four processes
//     would have) and GOMAXPROCS*4 goroutines on one name.
//
// Run with: go test -run '^$' -bench Mutex -benchmem
func BenchmarkMutex(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		c, _ := newClient(b, standalone)
		m := c.NewMutex(b.Name())
		b.ReportAllocs()
		for b.Loop() {
			m.Lock()
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
				m.Unlock()
			}
		})
	})
}
