package redisync_test

import (
	"fmt"

	"github.com/go-redisync/redisync"
)

// Readers share the lock; a writer, on its own handle, waits for them and
// keeps new readers out while it waits.
func ExampleRWMutex() {
	rc := connect()
	defer rc.Close()
	c, _ := redisync.New(rc)
	defer c.Close()

	config := c.NewRWMutex("config:pricing")
	config.RLock()
	fmt.Println(c.NewRWMutex("config:pricing").TryRLock()) // another reader shares
	fmt.Println(c.NewRWMutex("config:pricing").TryLock())  // a writer waits
	config.RUnlock()
	// Output:
	// true
	// false
}
