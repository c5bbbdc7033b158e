package redisync_test

import (
	"context"
	"testing"

	"github.com/go-redisync/redisync"
)

// BenchmarkObserver measures a serial Lock+Unlock pair of a Mutex without an
// observer (none: the cost of the hooks is a nil check; compare with
// BenchmarkMutex/serial of a build without them) and with one that does
// nothing (noop: the cost of building and passing the events).
//
// Run with: go test -run '^$' -bench Observer -benchmem -count 10
func BenchmarkObserver(b *testing.B) {
	noop := redisync.ObserverFunc(func(context.Context, redisync.Event) {})
	for _, bc := range []struct {
		name string
		opts []redisync.Option
	}{
		{name: "none"},
		{name: "noop", opts: []redisync.Option{redisync.WithObserver(noop)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c, _ := newClient(b, standalone, bc.opts...)
			m := c.NewMutex(b.Name())
			b.ReportAllocs()
			for b.Loop() {
				m.Lock()
				//lint:ignore SA2001 the Lock+Unlock pair is what is measured
				m.Unlock()
			}
		})
	}
}
