package redisync

import (
	"context"
	"sync/atomic"
)

// lastOwner numbers owners, of contexts and of handles, across the process.
var lastOwner atomic.Uint64

type ownerKey struct{}

// WithOwner returns a copy of ctx that carries a new owner identity.
//
// By default each handle is one owner and, like [sync.Mutex], does not
// re-enter: a second Lock waits. Calls given a context from WithOwner act for
// that context's owner instead, and re-enter: each LockContext by an owner
// that already holds the lock adds one hold, and the lock is released when
// the owner has called UnlockContext as many times, as Redisson's locks do for
// one thread. The owner may span handles of the same name on the same
// [Client], and goroutines, as long as its calls do not overlap in time.
func WithOwner(ctx context.Context) context.Context {
	return context.WithValue(ctx, ownerKey{}, lastOwner.Add(1))
}

// ownerOf returns the owner carried by ctx, or def when there is none.
func ownerOf(ctx context.Context, def uint64) (owner uint64, explicit bool) {
	if id, ok := ctx.Value(ownerKey{}).(uint64); ok {
		return id, true
	}
	return def, false
}
