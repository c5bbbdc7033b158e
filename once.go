package redisync

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/scripts"
)

// A Once runs a function once across every process that uses the same name
// on the same Redis, as [sync.Once] does across goroutines: the migration,
// backfill or warm-up that a fleet must run exactly once.
//
// One caller at a time runs the function, holding a claim under a lease that
// is renewed while its process lives (see [WithWatchdogTimeout] and
// [WithLease]); the other callers wait for it and return nil once it has
// succeeded. If the function fails, its caller gets the error and one waiting
// caller, or the next, runs it again. If the runner's process dies, its claim
// expires within one lease and a waiting caller runs the function.
//
// Like a lock, a claim can be lost while the function runs (see the package's
// safety model): the function's context is then cancelled, but a runner that
// is paused cannot notice in time, and the next runner may start before it
// ends. Make the function idempotent, or fence its writes, where that matters.
//
// Done and Err report the latest claim taken through the handle, IsLocked and
// TTL whether someone runs the function now. Its data in Redis is redisync's
// own. A Once must not be copied after first use.
type Once struct {
	handle
	l layout.Once // its keys and channel
}

// NewOnce returns a handle on the Once called name. Names, options and panics
// are as for [Client.NewMutex].
func (c *Client) NewOnce(name string, opts ...Option) *Once {
	c.single("NewOnce")
	o := &Once{l: layout.OnceOf(name)}
	c.initHandle(&o.handle, PrimitiveOnce, name, opts)
	o.key = o.l.Claim
	return o
}

// Do calls f if and only if no call of Do with the same name, in any process,
// has completed successfully; then it returns nil without calling f. f runs
// in one caller at a time; the others wait until it returns or ctx is done.
//
// If f returns an error, Do returns it and the Once is not done: a waiting
// caller, or the next, calls f again. If f panics, Do releases the claim
// without completing the Once and panics with the same value. f's context is
// cancelled when ctx is, or when the claim is lost; [context.Cause] then
// wraps [ErrLockLost].
//
// When ctx ends while Do waits, it returns ctx.Err() and leaves no claim and
// no subscription behind. A Redis failure is returned, wrapped; so is one
// that kept a successful f from being recorded, after which f may run again.
// Recording f's outcome after it returns waits for Redis up to the Client's
// call timeout ([WithCallTimeout]), even past ctx's deadline: Do cannot
// return before f does, and its error must say whether f's success was
// recorded.
func (o *Once) Do(ctx context.Context, f func(ctx context.Context) error) error {
	var succeeded atomic.Bool
	p := o.claimProto(&succeeded)
	a := &call{p: p, mode: waitFree, n: 1}
	if err := o.c.acquire(ctx, a, nil, returnErrors); err != nil || a.complete {
		return err
	}
	return o.run(ctx, p, a.term, &succeeded, f)
}

// run runs f under the claim of term t, then ends the claim, recording f's
// success (succeeded is what p's release sends).
func (o *Once) run(ctx context.Context, p *protocol, t *term, succeeded *atomic.Bool,
	f func(ctx context.Context) error) error {
	fctx, cancel := context.WithCancelCause(ctx)
	t.whenEnded(func() {
		_, err := t.result()
		cancel(err)
	})
	ended := false
	defer func() {
		cancel(nil)
		if !ended { // f panicked: end the claim without success
			_ = o.c.releaseHold(context.WithoutCancel(ctx), p, 1)
		}
	}()
	ferr := f(fctx)
	ended = true
	succeeded.Store(ferr == nil)
	rerr := o.c.releaseHold(context.WithoutCancel(ctx), p, 1)
	switch {
	case ferr != nil:
		if rerr != nil && !errors.Is(rerr, ErrLockLost) {
			o.cfg.logger.Warn("redisync: a failed Once's claim could not be released; it expires with its lease",
				"name", o.name, "error", rerr)
		}
		return ferr
	case errors.Is(rerr, ErrLockLost):
		// The claim was lost while f ran; f succeeded all the same, and the
		// release script records that even without the claim.
		_, rerr = p.release(context.WithoutCancel(ctx), release{Release: scripts.Release{Field: t.field, LatchKey: t.latchKey, From: 1, Latch: latchTTL}})
	}
	if rerr != nil {
		return fmt.Errorf("redisync: once %q: the function succeeded but that could not be recorded, so it may run again: %w",
			o.name, rerr)
	}
	return nil
}

// IsDone reports whether a call of f has succeeded (and Reset has not been
// called since).
func (o *Once) IsDone(ctx context.Context) (bool, error) {
	n, err := o.c.rc.Do(ctx, o.c.rc.B().Exists().Key(o.l.Done).Build()).AsInt64()
	if err != nil {
		return false, lockError(o.primitive, o.name, err)
	}
	return n == 1, nil
}

// Reset forgets that f has succeeded: the next Do calls it again. It does not
// affect a call of f in progress. It is meant for operators and tests.
func (o *Once) Reset(ctx context.Context) error {
	if err := o.c.rc.Do(ctx, o.c.rc.B().Del().Key(o.l.Done).Build()).Error(); err != nil {
		return lockError(o.primitive, o.name, err)
	}
	return nil
}

// ForceUnlock deletes the claim of the caller running f, whoever it is, so
// that a waiting caller runs f, and reports whether there was one. A claim
// taken through this Client ends as lost, which cancels its f's context.
func (o *Once) ForceUnlock(ctx context.Context) (bool, error) {
	return o.forceUnlockHash(ctx, o.l.Channel, "0")
}

// claimProto describes a claim of o by its handle's owner for one call of
// Do, whose release records f's success as succeeded says.
func (o *Once) claimProto(succeeded *atomic.Bool) *protocol {
	p := o.protocol(exclusive, o.l.Claim, o.owner, PrimitiveOnce, o.l.Channel, oncePolicy)
	p.latch = o.l.Latch
	p.acquire = func(ctx context.Context, a acquisition) (scripts.Reply, error) {
		return o.c.scripts.ClaimOnce(ctx, &o.l, a.hold(o.leaseMS))
	}
	p.release = func(ctx context.Context, r release) (scripts.Released, error) {
		return o.c.scripts.ReleaseOnce(ctx, &o.l, &r.Release, succeeded.Load())
	}
	p.newLease = func(t *term) *lease.Lease { return o.newLease(t, []string{o.l.Claim}, scripts.MutexRenew) }
	return p
}
