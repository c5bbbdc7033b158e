package redisync_test

import (
	"context"
	"fmt"

	"github.com/go-redisync/redisync"
)

// A MultiMutex locks both accounts of a transfer as one: a transfer the other
// way round, which names them in the other order, cannot deadlock with it,
// and a Mutex on either account waits for it.
func ExampleMultiMutex() {
	rc := connect()
	defer rc.Close()
	c, _ := redisync.New(rc)
	defer c.Close()

	ctx := context.Background()
	transfer := c.NewMultiMutex([]string{"account:alice", "account:bob"})
	if err := transfer.LockContext(ctx); err != nil {
		return
	}
	fmt.Println("alice locked elsewhere:", !c.NewMutex("account:alice").TryLock())
	transfer.Unlock()
	reverse := c.NewMultiMutex([]string{"account:bob", "account:alice"})
	fmt.Println("reverse locked:", reverse.TryLock())
	reverse.Unlock()
	// Output:
	// alice locked elsewhere: true
	// reverse locked: true
}
