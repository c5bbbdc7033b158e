package redisync_test

import (
	"context"
	"fmt"

	"github.com/go-redisync/redisync"
)

// A CountingSemaphore is the count of free permits a Java service's
// Redisson RSemaphore of the same name uses: the first use sets it to the
// size, each Acquire takes from it and each Release gives back (and wakes the
// waiters of both languages).
func ExampleCountingSemaphore() {
	rc := connect()
	defer rc.Close()
	c, _ := redisync.New(rc)
	defer c.Close()

	ctx := context.Background()
	s := c.NewCountingSemaphore("partner:calls", 3)
	_ = s.Acquire(ctx, 2)
	free, _ := s.Available(ctx)
	fmt.Println(free, s.TryAcquire(2))
	s.Release(2)
	free, _ = s.Available(ctx)
	fmt.Println(free)
	// Output:
	// 1 false
	// 3
}
