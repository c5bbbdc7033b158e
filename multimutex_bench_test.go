package redisync_test

import (
	"strconv"
	"testing"
)

// BenchmarkMultiMutex measures a MultiMutex of n names against the test's
// redis-server on loopback: Lock and Unlock, one goroutine (one script call
// each, whatever n, on one server).
//
// Run with: go test -run '^$' -bench MultiMutex -benchmem
func BenchmarkMultiMutex(b *testing.B) {
	c, _ := newClient(b, standalone)
	for _, n := range []int{2, 8} {
		b.Run(strconv.Itoa(n)+"-names", func(b *testing.B) {
			var names []string
			for i := range n {
				names = append(names, b.Name()+":"+strconv.Itoa(i))
			}
			m := c.NewMultiMutex(names)
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
