package redisync_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-redisync/redisync"
)

// A holder writes with its token; the resource rejects a holder whose lease
// ran out (here: a fixed lease that passes while the holder is paused) once
// the next holder has written.
func ExampleFencedMutex() {
	rc := connect()
	defer rc.Close()
	c, _ := redisync.New(rc)
	defer c.Close()
	ctx := context.Background()
	balance := c.NewFence("balance:7")

	paused := c.NewFencedMutex("account:7", redisync.WithLease(50*time.Millisecond))
	oldToken, _ := paused.LockToken(ctx)
	time.Sleep(100 * time.Millisecond) // a GC pause longer than the lease

	next := c.NewFencedMutex("account:7")
	newToken, _ := next.LockToken(ctx)
	fmt.Println(balance.Set(ctx, newToken, "120"))
	next.Unlock()

	err := balance.Set(ctx, oldToken, "100") // the paused holder wakes up and writes
	fmt.Println(errors.Is(err, redisync.ErrStaleToken))
	value, _, _ := balance.Get(ctx)
	fmt.Println(value)
	// Output:
	// <nil>
	// true
	// 120
}
