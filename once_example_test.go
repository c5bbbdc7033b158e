package redisync_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/go-redisync/redisync"
)

// A Once runs a job once for the whole fleet: here eight callers, as eight
// processes would, ask for the same migration, and it runs once.
func ExampleOnce() {
	rc := connect()
	defer rc.Close()
	c, _ := redisync.New(rc)
	defer c.Close()

	ctx := context.Background()
	runs := 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			_ = c.NewOnce("migration:42").Do(ctx, func(ctx context.Context) error {
				runs++ // one caller at a time, and only until one succeeds
				return nil
			})
		})
	}
	wg.Wait()
	fmt.Println("runs:", runs)
	_ = c.NewOnce("migration:42").Reset(ctx) // for the example's next run
	// Output: runs: 1
}

// A WaitGroup lets a process wait for workers in other processes: the
// coordinator adds the workers, each calls Done, and Wait returns at zero.
// A Redisson RCountDownLatch of the same name sees the same counter.
func ExampleWaitGroup() {
	rc := connect()
	defer rc.Close()
	c, _ := redisync.New(rc)
	defer c.Close()

	ctx := context.Background()
	batch := c.NewWaitGroup("batch:7")
	_ = batch.Add(ctx, 3)
	for range 3 {
		go func() {
			worker := c.NewWaitGroup("batch:7") // in a worker process
			_ = worker.Done(ctx)
		}()
	}
	fmt.Println(batch.Wait(ctx))
	n, _ := batch.Count(ctx)
	fmt.Println("count:", n)
	// Output:
	// <nil>
	// count: 0
}
