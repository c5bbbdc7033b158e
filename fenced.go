package redisync

import (
	"context"
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
// Java service's getFencedLock(name). It has all of Mutex's methods; Lock and
// the other Mutex methods take tokens too, which Token then reports.
//
// A FencedMutex must not be copied after first use.
type FencedMutex struct {
	Mutex
}

// NewFencedMutex returns a handle on the fenced mutex called name. Names,
// options and panics are as for [Client.NewMutex].
func (c *Client) NewFencedMutex(name string, opts ...Option) *FencedMutex {
	fm := new(FencedMutex)
	c.initMutex(&fm.Mutex, name, opts)
	fm.fenced = true
	return fm
}

// LockToken locks fm like [Mutex.LockContext] and returns the token granted,
// to write with every change to the protected resource.
func (fm *FencedMutex) LockToken(ctx context.Context) (uint64, error) {
	a := fm.call(ctx, waitFree, fm.proto)
	if err := fm.c.acquire(ctx, a, nil, false); err != nil {
		return 0, err
	}
	return uint64(a.value), nil
}

// TryLockToken makes one attempt to lock fm, like [Mutex.TryLockContext], and
// returns the token granted when it succeeded.
func (fm *FencedMutex) TryLockToken(ctx context.Context) (uint64, bool, error) {
	a := fm.call(ctx, waitFree, fm.proto)
	ok, err := fm.c.tryOnce(ctx, a)
	if !ok {
		return 0, false, err
	}
	return uint64(a.value), true, err
}

// Token returns the token of the latest acquisition of the hold that fm took
// last, or 0 when that hold has ended (released or lost).
func (fm *FencedMutex) Token() uint64 {
	if t := fm.cur.Load(); t != nil {
		if ended, _ := t.result(); !ended {
			return t.token.Load()
		}
	}
	return 0
}
