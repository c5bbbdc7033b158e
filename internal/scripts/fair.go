package scripts

import (
	"context"
	"strconv"

	"github.com/go-redisync/redisync/internal/layout"
)

// The scripts of FairMutex. FairHeartbeat serves every queue of waiters with
// heartbeats (the Semaphore's too).
var (
	FairAcquire     = loadWith("fair_acquire", "queue_lib")
	FairRelease     = loadWith("fair_release", "hold_lib", "queue_lib")
	FairForceUnlock = loadWith("fair_force_unlock", "queue_lib")
	FairHeartbeat   = loadWith("fair_heartbeat", "queue_lib")
)

// AcquireFair runs fair_acquire: hold h takes the FairMutex at l in queue
// order, or queues its waiter (keeps its place). With queueOnly the waiter
// only queues: its owner holds the lock through another call.
func (r *Runner) AcquireFair(ctx context.Context, l *layout.Fair, h Hold, queueOnly bool) (Reply, error) {
	mode := "own"
	if queueOnly {
		mode = "queue"
	}
	return r.pair(ctx, Call{
		Script: FairAcquire,
		Keys:   []string{l.Key, l.Queue, l.Alive, l.Channel, latchKey(l.Latch, h.Field, h.LatchKey)},
		Args:   []string{h.LeaseMS, h.Field, strconv.Itoa(h.Count), h.Waiter, ms(h.HeartbeatMS), r.publish, mode},
	})
}

// ReleaseFair runs fair_release: rel's hold leaves holds, or releases the lock
// and wakes the waiter whose turn is next; rel.Waiter, if set, leaves the
// queue.
func (r *Runner) ReleaseFair(ctx context.Context, l *layout.Fair, rel *Release) (Released, error) {
	var argv [7]string
	args := r.argv(&argv, rel)
	keys := []string{l.Key, l.Queue, l.Alive, l.Channel, latchKey(l.Latch, rel.Field, rel.LatchKey)}
	return r.queueReleased(ctx, Call{Script: FairRelease, Keys: keys,
		Args: append(args, rel.Waiter)})
}

// ForceUnlockFair runs fair_force_unlock: it deletes the FairMutex's hash at
// l, keeps the queue, wakes the waiter whose turn is next and returns the
// fields it deleted.
func (r *Runner) ForceUnlockFair(ctx context.Context, l *layout.Fair) ([]string, error) {
	return r.fields(ctx, Call{Script: FairForceUnlock, Keys: []string{l.Key, l.Queue, l.Alive, l.Channel}, Args: []string{r.publish}})
}
