package redisync_test

import (
	"context"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
)

// childHandover makes a child hold a Mutex with a second goroutine of the same
// handle queued for its handover, and unlock shortly after saying "held".
const childHandover = "REDISYNC_TEST_HANDOVER"

// runHandoverChild is the body of a childHandover child. Its second goroutine
// counts itself in name+":inside" once it holds the lock.
func runHandoverChild(c *redisync.Client, rc rueidis.Client, name string) int {
	// One P: after a pause, the goroutines whose timers expired run one at a
	// time, the one whose timer was due last first (it takes the runnext slot).
	// The unlocking goroutine's is due after the renewal's (at 333 ms), so it
	// unlocks before the renewal goroutine can look at its lease.
	runtime.GOMAXPROCS(1)
	m := c.NewMutex(name)
	m.Lock()
	go func() {
		m.Lock()
		_ = rc.Do(context.Background(), rc.B().Incr().Key(name+":inside").Build()).Error()
		m.Unlock()
	}()
	time.Sleep(50 * time.Millisecond) // the second goroutine queues for the handover
	fmt.Println("held")
	time.Sleep(100 * time.Millisecond) // the parent stops the process in here
	m.Unlock()
	select {} // until killed
}

// TestMutexNoHandoverAfterPause is the regression test of a bug the chaos
// suite found: a process paused past its lease (SIGSTOP, or a long GC) that
// unlocked on resuming handed its hold to a local waiter before the renewal
// goroutine had noticed the lease was gone, so that waiter ran its critical
// section while another process held the lock. A handover now needs the lease
// to be current. Which goroutine runs first on resuming is up to Go's
// scheduler (the bug showed in 6 runs of 10), so the scenario runs 5 times.
func TestMutexNoHandoverAfterPause(t *testing.T) {
	requireReal(t, standalone, "a server outside the stopped process")
	c, rc := newClient(t, standalone)
	base := freshName(t)
	for i := range 5 {
		name := fmt.Sprintf("%s-%d", base, i)
		child := startChildSaying(t, standalone, name, time.Second, "held", childHandover+"=1")
		require.NoError(t, child.Process.Signal(syscall.SIGSTOP))
		m := c.NewMutex(name)
		ctx, cancel := context.WithTimeout(context.Background(), hang)
		err := m.LockContext(ctx) // once the stopped child's lease (1 s) has run out
		_ = child.Process.Signal(syscall.SIGCONT)
		require.NoError(t, err)
		time.Sleep(500 * time.Millisecond) // the child unlocks on resuming
		inside := func() int64 {
			n, err := rc.Do(ctx, rc.B().Get().Key(name+":inside").Build()).AsInt64()
			if rueidis.IsRedisNil(err) {
				return 0
			}
			require.NoError(t, err)
			return n
		}
		require.Zero(t, inside(), "the child's waiter got the hold by a local handover while this process held the lock")
		m.Unlock()
		require.Eventually(t, func() bool { return inside() == 1 }, hang, 10*time.Millisecond,
			"the child's waiter is served through Redis")
		cancel()
	}
}
