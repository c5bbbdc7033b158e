package scripts

import (
	"context"
	"strconv"

	"github.com/go-redisync/redisync/internal/layout"
)

// The scripts of Once. A claim has a Mutex hash's shape, so MutexRenew renews
// it and MutexForceUnlock deletes it.
var (
	OnceClaim   = loadWith("once_claim", "hold_lib")
	OnceRelease = loadWith("once_release", "hold_lib")
)

// ClaimOnce runs once_claim: hold h claims the Once at l, unless its function
// has succeeded (Complete).
func (r *Runner) ClaimOnce(ctx context.Context, l *layout.Once, h Hold) (Reply, error) {
	return lockReply(r.integer(ctx, Call{Script: OnceClaim, Keys: []string{l.Claim, latchKey(l.Latch, h.Field, h.LatchKey), l.Done},
		Args: []string{h.LeaseMS, h.Field}}))
}

// ReleaseOnce runs once_release: rel's claim on the Once at l ends, recording
// the function's success when succeeded is set, and its waiters are woken.
func (r *Runner) ReleaseOnce(ctx context.Context, l *layout.Once, rel *Release, succeeded bool) (Released, error) {
	var argv [7]string
	args := append(r.argv(&argv, rel), flag(succeeded))
	keys := []string{l.Claim, l.Channel, latchKey(l.Latch, rel.Field, rel.LatchKey), l.Done}
	return r.released(ctx, Call{Script: OnceRelease, Keys: keys, Args: args})
}

// WaitGroupAdd is the script of WaitGroup.Add.
var WaitGroupAdd = load("waitgroup_add")

// AddWaitGroup runs waitgroup_add: delta is added to the counter at l unless the counter
// would go below zero. It reports whether it was applied and the counter
// after (or, refused, as it stands).
func (r *Runner) AddWaitGroup(ctx context.Context, l *layout.WaitGroup, delta int64) (applied bool, count int64, err error) {
	status, count, err := r.twoInts(ctx, Call{Script: WaitGroupAdd, Keys: []string{l.Key, l.Channel}, Args: []string{strconv.FormatInt(delta, 10), r.publish}})
	return status == 1, count, err
}
