package redisync

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/go-redisync/redisync/internal/notify"
)

// An attempt is the outcome of one try to acquire.
type attempt struct {
	acquired bool
	// wait is how long the lock stays taken unless released: the holder's
	// remaining lease. A negative value means unknown (no expiry).
	wait time.Duration
	// free, when set, means the caller's own owner holds the lock in this
	// process and does not re-enter; it is closed when that hold is released.
	free <-chan struct{}
}

// pollInterval bounds a wait when the holder's lease is unknown.
const pollInterval = time.Second

// A tryFunc makes one attempt to acquire.
type tryFunc func(ctx context.Context) (attempt, error)

// acquire is the waiter loop shared by the primitives. It tries; when the lock
// is taken it subscribes to channel (once, confirmed before the next try, so a
// release between the try and the subscription is not missed) and waits for
// the first of a wake-up, the holder's remaining lease, or the end of ctx; then
// it tries again. A lost message therefore costs at most one lease, never a hang.
//
// With retry set, errors from try are logged and retried with backoff (Lock);
// otherwise the first error is returned (LockContext). When ctx ends, acquire
// returns ctx.Err() unwrapped, leaving no subscription behind.
func (c *Client) acquire(ctx context.Context, name, channel string, try tryFunc, retry bool, cfg *config) error {
	var w *notify.Waiter
	acquired := false
	defer func() {
		if w != nil {
			w.Leave(!acquired)
		}
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for failures := 0; ; {
		if c.isClosed() {
			return lockError(name, ErrClosed)
		}
		a, err := try(ctx)
		if ctx.Err() != nil && !a.acquired {
			return ctx.Err()
		}
		var wake <-chan struct{}
		switch {
		case err != nil && !retry:
			return err
		case err != nil:
			failures++
			if failures == 3 || failures%100 == 0 {
				cfg.logger.Warn("redisync: lock attempts failing; retrying", "name", name, "attempts", failures, "error", err)
			}
			d := min(time.Duration(failures)*20*time.Millisecond, time.Second)
			timer.Reset(d/2 + rand.N(d))
		case a.acquired:
			acquired = true
			return nil
		case a.free != nil:
			wake = a.free
			timer.Reset(time.Hour)
		case w == nil:
			w = c.notify.Join(channel)
			wake = w.Ready()
			timer.Reset(waitBound(a.wait))
		default:
			wake = w.Wake()
			timer.Reset(waitBound(a.wait))
		}
		if err == nil {
			failures = 0
		}
		select {
		case <-wake:
		case <-timer.C:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.closed:
			return lockError(name, ErrClosed)
		}
	}
}

// waitBound is how long to wait for a wake-up before trying again: until the
// holder's lease runs out (plus a millisecond, as PTTL rounds down).
func waitBound(pttl time.Duration) time.Duration {
	if pttl < 0 {
		return pollInterval
	}
	return pttl + time.Millisecond
}
