package scripts

import (
	"context"
	"strconv"

	"github.com/go-redisync/redisync/internal/layout"
)

// The scripts of a FairMutex kept in Redisson's RFairLock layout.
// RFairHeartbeat keeps its queued waiters' eviction times ahead.
var (
	RFairAcquire     = loadWith("rfair_acquire", "queue_lib", "rfair_lib")
	RFairRelease     = loadWith("rfair_release", "hold_lib", "queue_lib", "rfair_lib")
	RFairForceUnlock = loadWith("rfair_force_unlock", "queue_lib", "rfair_lib")
	RFairHeartbeat   = loadWith("rfair_heartbeat", "queue_lib")
)

// AcquireRFair runs rfair_acquire: hold h takes the lock at l in Redisson's
// queue order, or queues its waiter (keeps its place) beside Java's; wait is
// Redisson's fairLockWaitTimeout. With queueOnly the waiter only queues: its
// owner holds the lock through another call.
func (r *Runner) AcquireRFair(ctx context.Context, l *layout.RFair, h Hold, wait string, queueOnly bool) (Reply, error) {
	mode := "own"
	if queueOnly {
		mode = "queue"
	}
	return r.pair(ctx, Call{
		Script: RFairAcquire,
		Keys:   []string{l.Key, l.Queue, l.Timeouts, l.Channel, latchKey(l.Latch, h.Field, h.LatchKey)},
		Args:   []string{h.LeaseMS, h.Field, strconv.Itoa(h.Count), h.Waiter, ms(h.HeartbeatMS), wait, mode, r.publish},
	})
}

// ReleaseRFair runs rfair_release: rel's hold leaves holds, or releases the
// lock and wakes the head of Redisson's queue; rel.Waiter, if set, leaves
// the queue.
func (r *Runner) ReleaseRFair(ctx context.Context, l *layout.RFair, rel *Release, wait string) (Released, error) {
	var argv [7]string
	args := r.argv(&argv, rel)
	keys := []string{l.Key, l.Queue, l.Timeouts, l.Channel, latchKey(l.Latch, rel.Field, rel.LatchKey)}
	return r.queueReleased(ctx, Call{Script: RFairRelease, Keys: keys,
		Args: append(args, rel.Waiter, wait)})
}

// ForceUnlockRFair runs rfair_force_unlock: it deletes the lock's hash at l,
// keeps the queue, wakes its head and returns the fields it deleted.
func (r *Runner) ForceUnlockRFair(ctx context.Context, l *layout.RFair) ([]string, error) {
	return r.fields(ctx, Call{Script: RFairForceUnlock, Keys: []string{l.Key, l.Queue, l.Timeouts, l.Channel}, Args: []string{r.publish}})
}
