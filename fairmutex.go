package redisync

import (
	"context"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/notify"
	"github.com/go-redisync/redisync/internal/scripts"
)

// A FairMutex is a mutual exclusion lock that serves its waiters strictly in
// the order they asked for it, across every process that uses the same name
// on the same Redis, as Redisson's RFairLock and etcd's concurrency.Mutex do.
// Apart from the order it behaves like [Mutex]: it is reentrant per owner
// (see [WithOwner]), one owner per handle otherwise, held under a lease, and
// [FairMutex.Done] and [FairMutex.Err] report a loss.
//
// A waiter's turn is fixed when it joins the queue, and [FairMutex.TryLock]
// does not take a free lock while others are queued. Only the waiter whose
// turn it is gets woken by a release. A waiter proves it is alive by a
// heartbeat (see [WithHeartbeatTimeout]) renewed for it by the Client while it
// waits: one whose process dies leaves the queue when its heartbeat lapses,
// and a live one is never evicted however long it waits. A waiter that gives
// up (its context ends) takes itself out of the queue.
//
// A re-entry by an owner that holds the lock does not queue. When Redis could
// not be reached for longer than the heartbeat timeout, a waiter loses its
// place and queues again at the end.
//
// Its data in Redis is redisync's own: a FairMutex excludes neither a Mutex
// nor a Redisson RFairLock of the same name.
//
// A FairMutex must not be copied after first use.
type FairMutex struct {
	handle
	l layout.Fair // its keys and channel
}

// NewFairMutex returns a handle on the fair mutex called name. Creating a
// handle touches neither Redis nor the network. The options override the
// Client's for this handle.
//
// NewFairMutex panics if name is invalid (see [Client.NewMutex]) or if an
// option is invalid.
func (c *Client) NewFairMutex(name string, opts ...Option) *FairMutex {
	fm := &FairMutex{l: layout.FairOf(name)}
	c.initHandle(&fm.handle, name, opts)
	fm.key = fm.l.Key
	return fm
}

// Lock locks fm. If the lock is already in use or others wait for it, the
// calling goroutine joins the queue and blocks until its turn comes. Redis
// failures do not end the wait: Lock retries with backoff, logging persistent
// failures, until it holds the lock. Lock panics if the Client is closed.
func (fm *FairMutex) Lock() {
	tk := fm.c.newTicket(fm.l.Alive, fm.l.Queue, &fm.cfg)
	fm.locked(fm.c.acquire(context.Background(), fm.caller(fm.owner, false), tk, true), "Lock of")
}

// TryLock tries to lock fm and reports whether it succeeded. It makes one
// attempt, which fails while others are queued even if the lock is free, and
// does not wait, neither for the lock nor for another call through the same
// owner that is waiting for Redis; a Redis failure counts as not acquired.
func (fm *FairMutex) TryLock() bool {
	return fm.tried(fm.TryLockContext(context.Background()))
}

// LockContext locks fm in queue order, waiting until the caller's turn comes
// and the lock is free, or until ctx is done. With an owner from [WithOwner]
// in ctx it acquires for that owner, re-entering at once (without queueing) a
// lock the owner already holds.
//
// When ctx ends first, LockContext returns ctx.Err() and leaves no lock, no
// queue entry and no subscription behind. A Redis failure is returned,
// wrapped; an attempt whose outcome is unknown is undone before LockContext
// returns.
func (fm *FairMutex) LockContext(ctx context.Context) error {
	return fm.c.acquire(ctx, fm.caller(ownerOf(ctx, fm.owner)), fm.c.newTicket(fm.l.Alive, fm.l.Queue, &fm.cfg), false)
}

// TryLockContext makes one attempt to lock fm, for the owner in ctx if any,
// and reports whether it succeeded. It does not queue: it fails while the lock
// is held or others are queued for it, unless the owner re-enters.
func (fm *FairMutex) TryLockContext(ctx context.Context) (bool, error) {
	return fm.c.tryOnce(ctx, fm.caller(ownerOf(ctx, fm.owner)))
}

// Unlock unlocks fm and wakes the waiter whose turn is next. It never hands
// the lock to another goroutine of the handle without Redis (their turns are
// kept there too); otherwise it behaves as [Mutex.Unlock], panicking if fm is
// not locked by its own owner in this process.
func (fm *FairMutex) Unlock() {
	fm.unlocked(fm.c.releaseHold(context.Background(), fm.proto(fm.owner), 1), "redisync: unlock of unlocked mutex")
}

// UnlockContext releases one hold of fm by the owner in ctx (fm's own owner if
// ctx has none); the lock is released, and the next waiter woken, when the
// owner's last hold is. Its errors and its handling of ctx are those of
// [Mutex.UnlockContext].
func (fm *FairMutex) UnlockContext(ctx context.Context) error {
	return fm.c.releaseHold(ctx, fm.proto(ownerIn(ctx, fm.owner)), 1)
}

// ForceUnlock deletes the lock whoever holds it, wakes the waiter whose turn
// is next, and reports whether it was locked. The queue is kept. The hold it
// deleted, if it was taken through this Client, ends as lost.
func (fm *FairMutex) ForceUnlock(ctx context.Context) (bool, error) {
	return fm.forceUnlocked(fm.c.scripts.ForceUnlockFair(ctx, &fm.l))
}

// HoldCount returns how many holds the owner in ctx (fm's own owner if ctx has
// none) has on the lock, as Redis records it: 0 when it does not hold it
// through this Client.
func (fm *FairMutex) HoldCount(ctx context.Context) (int, error) { return fm.holdCount(ctx, fair) }

// caller makes a call of owner; an explicit owner re-enters (without
// queueing).
func (fm *FairMutex) caller(owner uint64, explicit bool) *caller {
	a := &caller{p: fm.proto(owner), n: 1, mode: waitFree}
	if explicit {
		a.mode = reenter
	}
	return a
}

// proto describes owner's hold on fm.
func (fm *FairMutex) proto(owner uint64) *protocol { return fm.handle.proto(owner, fm.newProto) }

func (fm *FairMutex) newProto(owner uint64) *protocol {
	p := fm.protocol(fair, fm.l.Key, owner, PrimitiveFairMutex, fm.l.Channel, notify.Tagged)
	p.queued = true
	p.acquire, p.release = fm.runAcquire, fm.runRelease
	// The lock hash has Mutex's shape, so Mutex's renewal serves it.
	p.newLease = func(t *term) *lease.Lease { return fm.hashLease(t, []string{fm.l.Key}, scripts.MutexRenew) }
	return p
}

// runAcquire runs fair_acquire for a: it takes the lock in queue order, or
// queues a's ticket (keeps its place), or only queues when the owner holds
// the lock through another call.
func (fm *FairMutex) runAcquire(ctx context.Context, a acquisition) (scripts.Reply, error) {
	return fm.c.scripts.AcquireFair(ctx, &fm.l, a.hold(fm.leaseMS), a.queueOnly)
}

// runRelease runs fair_release once: the hold r.Field goes from r.From to
// r.To holds (0 releases the lock, waking the waiter whose turn is next),
// and waiter r.Waiter, if set, leaves the queue.
func (fm *FairMutex) runRelease(ctx context.Context, r release) (scripts.Released, error) {
	return fm.c.scripts.ReleaseFair(ctx, &fm.l, &r.Release)
}
