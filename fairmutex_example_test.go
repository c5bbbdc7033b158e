package redisync_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-redisync/redisync"
)

// A FairMutex serves its waiters in the order they queued, whichever process
// they are in.
func ExampleFairMutex() {
	rc := connect()
	defer rc.Close()
	c, _ := redisync.New(rc)
	defer c.Close()

	printer := c.NewFairMutex("printer")
	printer.Lock()
	var wg sync.WaitGroup
	for _, job := range []string{"first", "second", "third"} {
		m := c.NewFairMutex("printer") // in real life, in other processes
		wg.Go(func() {
			m.Lock()
			fmt.Println(job)
			m.Unlock()
		})
		time.Sleep(100 * time.Millisecond) // let it join the queue
	}
	printer.Unlock()
	wg.Wait()
	// Output:
	// first
	// second
	// third
}

// TryLock makes one attempt and does not wait (nor jump the queue: it also
// fails while others are queued). LockContext waits in the queue until its
// context ends, and then leaves it.
func ExampleFairMutex_TryLock() {
	rc := connect()
	defer rc.Close()
	c, _ := redisync.New(rc)
	defer c.Close()

	fm := c.NewFairMutex("batch:nightly")
	fmt.Println(fm.TryLock())
	fmt.Println(c.NewFairMutex("batch:nightly").TryLock())
	fm.Unlock()

	fm.Lock()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	fmt.Println(c.NewFairMutex("batch:nightly").LockContext(ctx))
	fm.Unlock()
	// Output:
	// true
	// false
	// context deadline exceeded
}

// A FairMutex in Redisson's RFairLock layout shares one lock and one line
// with the Java services that call getFairLock on the same name: here a Go
// waiter joins the line behind a hold, and is served when the holder (Java
// or Go) unlocks.
func ExampleClient_NewRedissonFairMutex() {
	rc := connect()
	defer rc.Close()
	c, _ := redisync.New(rc)
	defer c.Close()

	job := c.NewRedissonFairMutex("nightly-report") // Java: redisson.getFairLock("nightly-report")
	job.Lock()
	next := c.NewRedissonFairMutex("nightly-report")
	done := make(chan struct{})
	go func() {
		next.Lock() // queued in Redisson's line
		fmt.Println("served in turn")
		next.Unlock()
		close(done)
	}()
	time.Sleep(100 * time.Millisecond)
	job.Unlock() // wakes the head of the line, Java or Go
	<-done
	// Output:
	// served in turn
}
