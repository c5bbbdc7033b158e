package redisync_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/redisserver"
)

// More environment of a child process, for FairMutex and Semaphore children.
const (
	childKind      = "REDISYNC_TEST_KIND"      // see runQueuedChild
	childHeartbeat = "REDISYNC_TEST_HEARTBEAT" // heartbeat timeout of a queued child
)

// startQueuedChild re-executes the test binary as a process of the given
// kind (see runQueuedChild) on the lock name, and returns once the child has
// printed its first line, which must be want.
func startQueuedChild(t *testing.T, tg *redisserver.Target, kind, name string, watchdog, heartbeat time.Duration, want string) *exec.Cmd {
	t.Helper()
	return startChildSaying(t, tg, name, watchdog, want, childKind+"="+kind, childHeartbeat+"="+heartbeat.String())
}

// runQueuedChild is the body of a FairMutex or Semaphore child process:
//
//   - "fair-hold": lock the FairMutex name, print "held", wait to be killed;
//   - "fair-wait": print "waiting", then queue for the FairMutex name (the
//     parent watches the queue) and, if it ever gets it, print "held";
//   - "mutex-wait": print "waiting", then wait for the Mutex name (it
//     queues in Redis once the lock is found taken) and, if it ever gets
//     it, print "held";
//   - "sem-hold": acquire all 3 permits of the Semaphore name (size 3),
//     print "held", wait to be killed.
func runQueuedChild(c *redisync.Client, kind, name string) int {
	heartbeat, _ := time.ParseDuration(os.Getenv(childHeartbeat))
	opts := []redisync.Option{}
	if heartbeat > 0 {
		opts = append(opts, redisync.WithHeartbeatTimeout(heartbeat))
	}
	switch kind {
	case "fair-hold":
		if err := c.NewFairMutex(name, opts...).LockContext(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 2
		}
		fmt.Println("held")
	case "fair-wait":
		fmt.Println("waiting")
		c.NewFairMutex(name, opts...).Lock()
		fmt.Println("held")
	case "mutex-wait":
		fmt.Println("waiting")
		c.NewMutex(name, opts...).Lock()
		fmt.Println("held")
	case "sem-hold":
		if err := c.NewSemaphore(name, 3, opts...).Acquire(context.Background(), 3); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 2
		}
		fmt.Println("held")
	default:
		fmt.Fprintln(os.Stderr, "child: unknown kind", kind)
		return 2
	}
	select {} // until SIGKILL
}
