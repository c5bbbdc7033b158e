package benchmarks_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/benchmarks"
)

// BenchmarkLoneCall is what one command costs a lone caller (one goroutine,
// nothing else in flight) on each path rueidis offers, beside go-redis,
// which writes and reads in the caller's goroutine: wall time per call
// (ns/op) and this process's CPU per call (cpu-ns/op).
//
//   - pipeline: rueidis's auto-pipelining once its background writer and
//     reader run (they start at the first concurrent call, or at a call whose
//     context can be canceled but has no deadline, and keep running): the
//     command goes to the writer goroutine, its reply comes back from the
//     reader's.
//   - pipeline-sync: the same connection before its background goroutines
//     start: the caller writes and reads itself.
//   - dedicated: rc.Dedicated around the call, on a pipelined client: a
//     connection of the blocking pool, borrowed for the call.
//   - pool: a client with DisableAutoPipelining: every call borrows a pooled
//     connection.
func BenchmarkLoneCall(b *testing.B) {
	requireServer(b)
	ctx := context.Background()
	newClient := func(b *testing.B, opt rueidis.ClientOption) rueidis.Client {
		rc, err := rueidis.NewClient(opt)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(rc.Close)
		return rc
	}
	ping := func(rc rueidis.Client) func() error {
		return func() error { return rc.Do(ctx, rc.B().Ping().Build()).Error() }
	}
	b.Run("rueidis-pipeline", func(b *testing.B) {
		rc := newClient(b, benchmarks.RueidisOption(addr))
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if err := rc.Do(cctx, rc.B().Ping().Build()).Error(); err != nil { // starts the background goroutines
			b.Fatal(err)
		}
		lone(b, ping(rc))
	})
	b.Run("rueidis-pipeline-sync", func(b *testing.B) {
		lone(b, ping(newClient(b, benchmarks.RueidisOption(addr))))
	})
	b.Run("rueidis-dedicated", func(b *testing.B) {
		rc := newClient(b, benchmarks.RueidisOption(addr))
		lone(b, func() error {
			return rc.Dedicated(func(c rueidis.DedicatedClient) error {
				return c.Do(ctx, c.B().Ping().Build()).Error()
			})
		})
	})
	b.Run("rueidis-pool", func(b *testing.B) {
		opt := benchmarks.RueidisOption(addr)
		opt.DisableAutoPipelining = true
		lone(b, ping(newClient(b, opt)))
	})
	b.Run("go-redis", func(b *testing.B) {
		rdb := goredis.NewClient(&goredis.Options{Addr: addr})
		b.Cleanup(func() { _ = rdb.Close() })
		lone(b, func() error { return rdb.Ping(ctx).Err() })
	})
}

// lone runs call b.N times in one goroutine and reports the process's CPU
// per call beside the wall time.
func lone(b *testing.B, call func() error) {
	if err := call(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu := benchmarks.ProcessCPU()
	b.ResetTimer()
	for range b.N {
		if err := call(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((benchmarks.ProcessCPU()-cpu)/time.Nanosecond)/float64(b.N), "cpu-ns/op")
}
