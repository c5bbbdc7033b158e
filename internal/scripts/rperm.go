package scripts

import (
	"context"

	"github.com/go-redisync/redisync/internal/layout"
)

// The scripts of a semaphore in Redisson's RPermitExpirableSemaphore layout.
var (
	RPermAcquire = loadWith("rperm_acquire", "queue_lib", "rperm_lib")
	RPermRelease = loadWith("rperm_release", "rperm_lib")
	RPermUndo    = loadWith("rperm_undo", "rperm_lib")
)

// AcquireRPerm runs rperm_acquire for the call whose latch is l.Latch + ":"
// + call: it takes a permit per id, each leased for leaseMS, setting the
// free count to size when absent.
func (r *Runner) AcquireRPerm(ctx context.Context, l *layout.RPermit, call, size, leaseMS, latchMS string, ids []string) (Reply, error) {
	return r.pair(ctx, Call{
		Script: RPermAcquire,
		Keys:   []string{l.Key, l.Leases, l.Channel, l.Latch + ":" + call},
		Args:   append([]string{size, leaseMS, latchMS, r.publish}, ids...),
	})
}

// ReleaseRPerm runs rperm_release: the permits ids go back to the free
// count; it returns how many were still taken.
func (r *Runner) ReleaseRPerm(ctx context.Context, l *layout.RPermit, ids []string) (int64, error) {
	call := Call{Script: RPermRelease, Keys: []string{l.Key, l.Leases, l.Channel}, Args: append([]string{r.publish}, ids...)}
	call.Retryable = true // a repeat gives nothing back twice
	return r.integer(ctx, call)
}

// UndoRPerm runs rperm_undo for the call whose latch is l.Latch + ":" +
// call: what its attempts took of ids goes back, and its late copies take
// nothing; it returns how many permits went back.
func (r *Runner) UndoRPerm(ctx context.Context, l *layout.RPermit, call, latchMS string, ids []string) (int64, error) {
	c := Call{Script: RPermUndo, Keys: []string{l.Key, l.Leases, l.Channel, l.Latch + ":" + call},
		Args: append([]string{r.publish, latchMS}, ids...)}
	c.Retryable = true
	return r.integer(ctx, c)
}
