package redisync

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/go-redisync/redisync/internal/mutant"
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
	// handoff, when set with free, is the caller's place in the queue of the
	// owner's callers to which a release hands the hold directly.
	handoff *handoffWait
	// reentered marks an acquisition by an owner that already held: it
	// joined the current term instead of starting one.
	reentered bool
	// localHandoff marks a hold handed over by a local release (no Redis).
	localHandoff bool
}

// pollInterval bounds a wait when the holder's lease is unknown.
const pollInterval = time.Second

// An acquirer is what the waiter loop needs from a primitive.
type acquirer interface {
	// try makes one attempt to acquire. Attempts must be idempotent: after a
	// failure whose outcome is unknown, trying again must not take twice.
	try(ctx context.Context) (attempt, error)
	// undo releases what a failed attempt of unknown outcome may have taken.
	undo(ctx context.Context)
	// primitive names the lock's sort in events (Event.Primitive).
	primitive() string
}

// A leaver is an acquirer that leaves a mark in Redis while it waits (a
// writer's claim), which it must take back when it gives up.
type leaver interface {
	leave(ctx context.Context)
}

// transientBudget is how long LockContext rides out a run of transport
// failures (a killed connection, a reconnect) before it returns the error.
const transientBudget = time.Second

// acquire is the waiter loop shared by the primitives. It tries; when the lock
// is taken it subscribes to channel (once, confirmed before the next try, so a
// release between the try and the subscription is not missed) and waits for
// the first of a wake-up, the holder's remaining lease, or the end of ctx; then
// it tries again. A lost message therefore costs at most one lease, never a hang.
//
// A verdict (ErrLockLost, ErrClosed, ErrUpgrade) is returned at once. With
// forever set, failures are logged and retried with backoff until the
// lock is held (Lock). Otherwise an error reply from Redis is returned at once
// and transport failures are retried for up to transientBudget (LockContext).
// When ctx ends, acquire returns ctx.Err() unwrapped. Whatever it returns, it
// leaves no subscription behind and, when it fails, no hold: an attempt whose
// outcome is unknown is undone.
func (c *Client) acquire(ctx context.Context, name, channel string, a acquirer, forever bool, cfg *config) (err error) {
	var start time.Time // the call's start, taken only for an observer
	if cfg.observer != nil {
		start = observeAttempt(ctx, cfg, a.primitive(), name)
	}
	var w *notify.Waiter
	var queued *handoffWait // the caller's place for a handover, while it waits
	uncertain := false      // the last attempt failed with an unknown outcome
	defer func() {
		if queued != nil {
			c.abandonHandoff(ctx, queued)
		}
		if w != nil {
			w.Leave(err != nil)
		}
		if err != nil && uncertain {
			a.undo(ctx)
		}
		if l, ok := a.(leaver); ok && err != nil {
			l.leave(ctx)
		}
		if err != nil && cfg.observer != nil {
			observeFailed(ctx, cfg, a.primitive(), name, start, err)
		}
	}()
	// The timer is made on the first wait: most acquisitions need none.
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	sleep := func(d time.Duration) {
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
	}
	var firstFailure time.Time
	for failures := 0; ; {
		if c.isClosed() {
			return lockError(name, ErrClosed)
		}
		res, tryErr := a.try(ctx)
		if res.handoff != nil {
			queued = res.handoff // from now on, giving up must leave the queue
		}
		if ctx.Err() != nil && !res.acquired {
			uncertain = uncertain || (tryErr != nil && ambiguous(tryErr))
			return ctx.Err()
		}
		if tryErr == nil {
			failures, uncertain = 0, false
		} else {
			uncertain = ambiguous(tryErr)
			if failures == 0 {
				firstFailure = time.Now()
			}
		}
		var wake <-chan struct{}
		var src WakeSource // what a wake-up means, 0 when the wait is no wait for the lock
		switch {
		case tryErr != nil && (verdict(tryErr) || !forever && (!uncertain || time.Since(firstFailure) >= transientBudget)):
			return tryErr
		case tryErr != nil:
			failures++
			if forever && (failures == 3 || failures%100 == 0) {
				cfg.logger.Warn("redisync: lock attempts failing; retrying", "name", name, "attempts", failures, "error", tryErr)
			}
			d := min(time.Duration(failures)*20*time.Millisecond, time.Second)
			sleep(d/2 + rand.N(d))
		case res.acquired:
			if cfg.observer != nil {
				observeAcquired(ctx, cfg, a.primitive(), name, start, res)
			}
			return nil
		case res.free != nil:
			wake, src = res.free, WakeLocal
			sleep(time.Hour)
		case w == nil:
			w = c.notify.Join(channel)
			wake = w.Ready()
			sleep(waitBound(res.wait))
		default:
			wake, src = w.Wake(), WakePubSub // or another source: w knows
			sleep(waitBound(res.wait))
		}
		var handedOver <-chan struct{}
		if queued != nil {
			handedOver = queued.ch
		}
		select {
		case <-handedOver:
			queued = nil
			if cfg.observer != nil {
				observeAcquired(ctx, cfg, a.primitive(), name, start, attempt{acquired: true, localHandoff: true})
			}
			return nil
		case <-wake:
			queued = nil // a release that closes free hands nothing over
			if cfg.observer != nil && src != 0 {
				observeWait(ctx, cfg, a.primitive(), name, w, src, true)
			}
		case <-timer.C:
			if cfg.observer != nil && src != 0 {
				observeWait(ctx, cfg, a.primitive(), name, w, src, false)
			}
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
	if mutant.On("no-fallback") {
		return time.Hour
	}
	if pttl < 0 {
		return pollInterval
	}
	return pttl + time.Millisecond
}
