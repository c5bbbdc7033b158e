package redisync

import (
	"context"
	"time"
)

// A FencedMutex is a [Mutex] whose every acquisition is granted a fencing
// token: a number greater than every token granted before for the same name,
// by any client, across lease expiries, SCRIPT FLUSH, the loss of the counter
// key and a restart of a Redis server without persistence. The protected
// resource keeps the highest token it has seen and rejects writes carrying a
// lower one, so a holder whose lease ran out while it was paused cannot
// overwrite its successor's work: see [Fence], and the package documentation
// for the same check in SQL.
//
// A FencedMutex uses Redisson's RFencedLock layout (the RLock hash plus the
// counter redisson_lock_token:{name}), so it excludes and is excluded by a
// Java service's getFencedLock(name). It has Mutex's methods, which behave as
// Mutex's do, except that every acquisition takes a token, which Token then
// reports, and that a release does not hand the hold over to a waiting call
// without Redis (each acquisition must take its token there).
//
// A FencedMutex must not be copied after first use.
type FencedMutex struct {
	m Mutex // with fenced set; not exported, so that the API is FencedMutex's own
}

// NewFencedMutex returns a handle on the fenced mutex called name. Names,
// options and panics are as for [Client.NewMutex].
func (c *Client) NewFencedMutex(name string, opts ...Option) *FencedMutex {
	fm := new(FencedMutex)
	c.initMutex(&fm.m, PrimitiveFencedMutex, name, opts)
	fm.m.fenced = true
	return fm
}

// LockToken locks fm like [Mutex.LockContext] and returns the token granted,
// to write with every change to the protected resource.
func (fm *FencedMutex) LockToken(ctx context.Context) (uint64, error) {
	a, err := fm.m.lock(ctx, waitFree, returnErrors)
	if err != nil {
		return 0, err
	}
	return uint64(a.value), nil
}

// TryLockToken makes one attempt to lock fm, like [Mutex.TryLockContext], and
// returns the token granted when it succeeded.
func (fm *FencedMutex) TryLockToken(ctx context.Context) (uint64, bool, error) {
	a := fm.m.call(ctx, waitFree, fm.m.proto)
	ok, err := fm.m.c.tryOnce(ctx, a)
	if !ok {
		return 0, false, err
	}
	return uint64(a.value), true, err
}

// Token returns the token of the latest acquisition of the hold that fm took
// last, or 0 when that hold has ended (released or lost).
func (fm *FencedMutex) Token() uint64 {
	if t := fm.m.cur.Load(); t != nil {
		if ended, _ := t.result(); !ended {
			return t.token.Load()
		}
	}
	return 0
}

// Lock locks fm like [Mutex.Lock]; Token reports the token it took.
func (fm *FencedMutex) Lock() { fm.m.Lock() }

// LockContext locks fm like [Mutex.LockContext]; Token reports the token it
// took.
func (fm *FencedMutex) LockContext(ctx context.Context) error { return fm.m.LockContext(ctx) }

// TryLock makes one attempt to lock fm like [Mutex.TryLock]; Token reports
// the token it took.
func (fm *FencedMutex) TryLock() bool { return fm.m.TryLock() }

// TryLockContext makes one attempt to lock fm like [Mutex.TryLockContext];
// Token reports the token it took.
func (fm *FencedMutex) TryLockContext(ctx context.Context) (bool, error) {
	return fm.m.TryLockContext(ctx)
}

// Unlock unlocks fm like [Mutex.Unlock].
func (fm *FencedMutex) Unlock() { fm.m.Unlock() }

// UnlockContext releases one hold of fm like [Mutex.UnlockContext].
func (fm *FencedMutex) UnlockContext(ctx context.Context) error { return fm.m.UnlockContext(ctx) }

// ForceUnlock deletes the lock whoever holds it, like [Mutex.ForceUnlock].
func (fm *FencedMutex) ForceUnlock(ctx context.Context) (bool, error) {
	return fm.m.ForceUnlock(ctx)
}

// HoldCount returns how many holds the owner in ctx has on the lock, like
// [Mutex.HoldCount].
func (fm *FencedMutex) HoldCount(ctx context.Context) (int, error) { return fm.m.HoldCount(ctx) }

// IsLocked reports whether anyone holds the lock, like [Mutex.IsLocked].
func (fm *FencedMutex) IsLocked(ctx context.Context) (bool, error) { return fm.m.IsLocked(ctx) }

// TTL returns the lock's remaining lease, like [Mutex.TTL].
func (fm *FencedMutex) TTL(ctx context.Context) (time.Duration, error) { return fm.m.TTL(ctx) }

// Name returns the lock's name, as given to NewFencedMutex.
func (fm *FencedMutex) Name() string { return fm.m.Name() }

// Context returns a copy of parent cancelled when the hold taken by fm's
// latest acquisition ends, like [Mutex.Context].
func (fm *FencedMutex) Context(parent context.Context) context.Context { return fm.m.Context(parent) }

// Done returns a channel closed when the hold taken by fm's latest
// acquisition ends, like [Mutex.Done].
func (fm *FencedMutex) Done() <-chan struct{} { return fm.m.Done() }

// Err reports how the hold taken by fm's latest acquisition ended, like
// [Mutex.Err].
func (fm *FencedMutex) Err() error { return fm.m.Err() }
