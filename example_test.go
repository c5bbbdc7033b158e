package redisync_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync"
)

// connect returns a rueidis client for the examples' test server. In your
// program: rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}}).
func connect() rueidis.Client {
	rc, err := standalone.NewClient()
	if err != nil {
		panic(err)
	}
	return rc
}

func Example() {
	rc := connect()
	defer rc.Close()
	c, err := redisync.New(rc) // one per process
	if err != nil {
		panic(err)
	}
	defer c.Close()

	m := c.NewMutex("order:42") // a cheap handle; implements sync.Locker
	m.Lock()                    // held in watchdog mode: renewed while this process lives
	fmt.Println("processing order 42")
	m.Unlock()
	// Output: processing order 42
}

// LockContext waits as long as the context allows, like Redisson's
// tryLock(waitTime).
func ExampleMutex_LockContext() {
	rc := connect()
	defer rc.Close()
	c, _ := redisync.New(rc)
	defer c.Close()

	holder := c.NewMutex("report:daily")
	holder.Lock()
	defer holder.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := c.NewMutex("report:daily").LockContext(ctx)
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	// Output: true
}

// An owner from WithOwner re-enters a lock it holds, across handles of the
// same name, as Redisson's locks do per thread.
func ExampleWithOwner() {
	rc := connect()
	defer rc.Close()
	c, _ := redisync.New(rc)
	defer c.Close()

	ctx := redisync.WithOwner(context.Background())
	outer := c.NewMutex("account:7")
	_ = outer.LockContext(ctx)
	inner := c.NewMutex("account:7") // say, in a function called with ctx
	_ = inner.LockContext(ctx)
	n, _ := inner.HoldCount(ctx)
	fmt.Println("holds:", n)
	_ = inner.UnlockContext(ctx)
	_ = outer.UnlockContext(ctx)
	n, _ = outer.HoldCount(ctx)
	fmt.Println("holds:", n)
	// Output:
	// holds: 2
	// holds: 0
}

// Done tells a holder that its lock is gone, so that it can stop work that
// is no longer protected.
func ExampleMutex_Done() {
	rc := connect()
	defer rc.Close()
	c, _ := redisync.New(rc)
	defer c.Close()

	m := c.NewMutex("migration:v2", redisync.WithLease(50*time.Millisecond))
	m.Lock()
	defer m.Unlock()
	select {
	case <-m.Done(): // the lease ran out, or the lock was deleted or force-unlocked
		fmt.Println(errors.Is(m.Err(), redisync.ErrLockLost))
	case <-time.After(time.Second): // the work finished in time
		fmt.Println("done")
	}
	// Output: true
}

// WithSyncReplicas makes an acquisition wait until the primary's replicas
// have it, so that a failover right after it keeps the lock. Here the server
// has no replica, so "every connected replica" is none.
func ExampleWithSyncReplicas() {
	rc := connect()
	defer rc.Close()
	c, _ := redisync.New(rc, redisync.WithSyncReplicas(-1, time.Second))
	defer c.Close()

	m := c.NewMutex("payment:7")
	err := m.LockContext(context.Background())
	if errors.Is(err, redisync.ErrNotReplicated) {
		fmt.Println("not on enough replicas in time; not held")
		return
	}
	fmt.Println("locked:", err == nil)
	m.Unlock()
	// Output: locked: true
}

// WithShardedPubSub(false), given to New, makes a Client on Redis Cluster
// publish and subscribe classically, as a Java service does whose Redisson
// has no sharded subscriptions: each side then wakes the other's waiters.
func ExampleWithShardedPubSub() {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"10.0.0.1:7000"}, DisableCache: true})
	if err != nil {
		return
	}
	defer rc.Close()
	c, err := redisync.New(rc, redisync.WithShardedPubSub(false))
	if err != nil {
		return
	}
	defer c.Close()
	_ = c.NewMutex("order:42") // shares the lock, and its wake-ups, with Java's getLock("order:42")
}

// NewQuorum holds each lock on a majority of independent deployments: here
// three standalone servers (the addresses are examples). A FencedMutex's
// tokens come from the same majority.
func ExampleNewQuorum() {
	var rcs []rueidis.Client
	for _, addr := range []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"} {
		rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
		if err != nil {
			log.Fatal(err)
		}
		defer rc.Close()
		rcs = append(rcs, rc)
	}
	c, err := redisync.NewQuorum(rcs, redisync.WithWatchdogTimeout(10*time.Second))
	if err != nil {
		log.Fatal(err) // fewer than a majority answered (ErrNoQuorum), or a bad list
	}
	defer c.Close()

	m := c.NewMutex("payments:7")
	if err := m.LockContext(context.Background()); err != nil {
		log.Fatal(err)
	}
	defer m.Unlock()
	// The lock holds while a majority renews it; m.Done() says when it does not.
}
