package benchmarks_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-redisync/redisync/benchmarks"
)

// TestFloorExcludes checks that the floors of cmd/serverwork are locks at
// all: a second Lock on a held name waits until the first is unlocked, and
// the release lets it in.
func TestFloorExcludes(t *testing.T) {
	requireServer(t)
	for _, p := range []benchmarks.Peer{benchmarks.Floor(), benchmarks.FloorPlain()} {
		t.Run(p.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := p.Connect(addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			m := c.NewMutex("floor-" + t.Name())
			held, err := m.Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			short, stop := context.WithTimeout(ctx, 50*time.Millisecond)
			_, err = m.Lock(short)
			stop()
			if err == nil {
				t.Fatal("a second Lock got a held lock")
			}
			if err := held.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			again, err := m.Lock(ctx)
			if err != nil {
				t.Fatalf("the lock is not free after Unlock: %v", err)
			}
			if err := again.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
