package redisync_test

import (
	"context"
	"fmt"
	"time"

	"github.com/go-redisync/redisync"
)

// A Semaphore bounds how many holders, across every process, use a resource
// at once: here two of weight 1 fill a semaphore of size 2, and a third waits
// until its context gives up.
func ExampleSemaphore() {
	rc := connect()
	defer rc.Close()
	c, _ := redisync.New(rc)
	defer c.Close()

	ctx := context.Background()
	a := c.NewSemaphore("api:quota", 2) // a handle per holder
	b := c.NewSemaphore("api:quota", 2)
	_ = a.Acquire(ctx, 1)
	_ = b.Acquire(ctx, 1)

	wait, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	fmt.Println(c.NewSemaphore("api:quota", 2).Acquire(wait, 1))
	a.Release(1)
	b.Release(1)
	// Output: context deadline exceeded
}

// TryAcquire takes permits only when they are free and nobody is queued.
func ExampleSemaphore_TryAcquire() {
	rc := connect()
	defer rc.Close()
	c, _ := redisync.New(rc)
	defer c.Close()

	s := c.NewSemaphore("gpu:pool", 4)
	fmt.Println(s.TryAcquire(3))
	fmt.Println(c.NewSemaphore("gpu:pool", 4).TryAcquire(2))
	s.Release(3)
	// Output:
	// true
	// false
}
