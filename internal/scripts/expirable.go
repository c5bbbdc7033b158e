package scripts

import (
	"context"

	"github.com/go-redisync/redisync/internal/layout"
)

// The scripts of a semaphore in Redisson's RPermitExpirableSemaphore layout.
var (
	ExpirableAcquire   = loadWith("expirable_acquire", "queue_lib", "expirable_lib")
	ExpirableRelease   = loadWith("expirable_release", "queue_lib", "expirable_lib")
	ExpirableUndo      = loadWith("expirable_undo", "expirable_lib")
	ExpirableRenew     = loadWith("expirable_renew", "queue_lib", "expirable_lib")
	ExpirableAvailable = loadWith("expirable_available", "queue_lib", "expirable_lib")
)

// expirableKeys returns the keys of a call on the semaphore at l; with call set,
// its latch is the fourth.
func expirableKeys(l *layout.ExpirableSem, call string) []string {
	if call == "" {
		return []string{l.Key, l.Leases, l.Channel}
	}
	return []string{l.Key, l.Leases, l.Channel, l.Latch + ":" + call}
}

// AcquireExpirable runs expirable_acquire for the call whose latch is l.Latch + ":"
// + call: it takes a permit per id, each leased for leaseMS ("-1": no lease),
// setting the free count to size when absent.
func (r *Runner) AcquireExpirable(ctx context.Context, l *layout.ExpirableSem, call, size, leaseMS, latchMS string, ids []string) (Reply, error) {
	return r.pair(ctx, Call{
		Script: ExpirableAcquire,
		Keys:   expirableKeys(l, call),
		Args:   append([]string{size, leaseMS, latchMS, r.publish}, ids...),
	})
}

// ReleaseExpirable runs expirable_release for the release whose latch is l.Latch +
// ":" + call: the permits go back to the free count. members holds two per
// permit, either of which may be recorded (its id's bytes, its id as text). It returns how
// many were taken with their lease running (held) and how many with their
// lease ended (ended); a repeat of the release answers the same and gives
// nothing back twice.
func (r *Runner) ReleaseExpirable(ctx context.Context, l *layout.ExpirableSem, call, latchMS string, members []string) (held, ended int64, err error) {
	c := Call{Script: ExpirableRelease, Keys: expirableKeys(l, call), Args: append([]string{r.publish, latchMS}, members...)}
	c.Retryable = true
	return r.twoInts(ctx, c)
}

// UndoExpirable runs expirable_undo for the call whose latch is l.Latch + ":" +
// call: what its attempts took of ids goes back, and its late copies take
// nothing; it returns how many permits went back.
func (r *Runner) UndoExpirable(ctx context.Context, l *layout.ExpirableSem, call, latchMS string, ids []string) (int64, error) {
	c := Call{Script: ExpirableUndo, Keys: expirableKeys(l, call), Args: append([]string{r.publish, latchMS}, ids...)}
	c.Retryable = true
	return r.integer(ctx, c)
}

// RenewExpirable runs expirable_renew: the lease of the permit recorded as bytes or
// as text ends leaseMS from now ("-1": never). It reports whether the
// permit was still taken.
func (r *Runner) RenewExpirable(ctx context.Context, l *layout.ExpirableSem, bytes, text, leaseMS string) (bool, error) {
	c := Call{Script: ExpirableRenew, Keys: expirableKeys(l, ""), Args: []string{r.publish, leaseMS, bytes, text}}
	c.Retryable = true // a repeat renews from its own now
	n, err := r.integer(ctx, c)
	return n == 1, err
}

// AvailableExpirable runs expirable_available: the free permits after ended leases
// are given back, or -1 when the count is not set.
func (r *Runner) AvailableExpirable(ctx context.Context, l *layout.ExpirableSem) (int64, error) {
	c := Call{Script: ExpirableAvailable, Keys: expirableKeys(l, ""), Args: []string{r.publish}}
	c.Retryable = true
	return r.integer(ctx, c)
}
