package redisync_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-redisync/redisync"
)

// An ExpirableSemaphore is a Java service's Redisson
// RPermitExpirableSemaphore of the same name: each Acquire returns a
// permit's id, leased for as long as it asks, and Release gives the permit
// back by its id. A permit whose lease ended went back by itself.
func ExampleExpirableSemaphore() {
	rc := connect()
	defer rc.Close()
	c, _ := redisync.New(rc)
	defer c.Close()

	ctx := context.Background()
	s := c.NewExpirableSemaphore("partner:slots", 2)
	id, _ := s.Acquire(ctx, time.Minute)
	short, _ := s.Acquire(ctx, 100*time.Millisecond)
	_, ok := s.TryAcquire(time.Minute)
	fmt.Println(len(id), ok)

	time.Sleep(300 * time.Millisecond) // short's lease ends, and the permit goes back
	err := s.Release(ctx, short)
	fmt.Println(errors.Is(err, redisync.ErrLeaseExpired)) // back already; nobody else had taken it
	_ = s.Release(ctx, id)
	free, _ := s.Available(ctx)
	fmt.Println(free)
	// Output:
	// 32 false
	// true
	// 2
}
