package redisync_test

import (
	"context"
	"fmt"

	"github.com/go-redisync/redisync"
)

// An Election picks one scheduler among several: each campaigns with its
// address, the winner works while it leads, and an observer follows the
// leader's address.
func ExampleElection() {
	rc := connect()
	defer rc.Close()
	c, _ := redisync.New(rc)
	defer c.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leaders := c.NewElection("scheduler").Observe(ctx)

	e := c.NewElection("scheduler") // one per candidate process
	_ = e.Campaign(ctx, "10.0.0.7:8080")
	fmt.Println("observed:", <-leaders)
	// Lead until Resign; <-e.Done() would tell of a lost leadership.
	_ = e.Proclaim(ctx, "10.0.0.7:9090")
	fmt.Println("observed:", <-leaders)
	_ = e.Resign(ctx)
	// Output:
	// observed: 10.0.0.7:8080
	// observed: 10.0.0.7:9090
}
