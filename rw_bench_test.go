package redisync_test

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// BenchmarkRWMutex measures GOMAXPROCS*4 goroutines of one Client, each with
// its own handle on one name:
//
//   - read: RLock+RUnlock only (readers share the lock);
//   - mixed: nine read pairs for one Lock+Unlock.
//
// Run with: go test -run '^$' -bench RWMutex -benchmem
func BenchmarkRWMutex(b *testing.B) {
	for _, writeEvery := range []int64{0, 10} {
		name := "read"
		if writeEvery > 0 {
			name = fmt.Sprintf("mixed-1-in-%d", writeEvery)
		}
		b.Run(name, func(b *testing.B) {
			c, _ := newClient(b, standalone)
			var n atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				rw := c.NewRWMutex(b.Name())
				for pb.Next() {
					if writeEvery > 0 && n.Add(1)%writeEvery == 0 {
						rw.Lock()
						//lint:ignore SA2001 the pair is what is measured
						rw.Unlock()
						continue
					}
					rw.RLock()
					//lint:ignore SA2001 the pair is what is measured
					rw.RUnlock()
				}
			})
		})
	}
}
