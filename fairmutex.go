package redisync

import (
	"context"
	"strconv"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/scripts"
)

// A FairMutex is a mutual exclusion lock that serves its waiters strictly in
// the order they asked for it, across every process that uses the same name
// on the same Redis, as Redisson's RFairLock and etcd's concurrency.Mutex do.
// Apart from the order it behaves like [Mutex]: it is reentrant per owner
// (see [WithOwner]), one owner per handle otherwise, held under a lease, and
// [FairMutex.Done] and [FairMutex.Err] report a loss.
//
// A waiter's turn is fixed when it joins the queue, [FairMutex.TryLock] does
// not take a free lock while others are queued, and a release wakes only the
// waiter whose turn it is. A waiter proves it is alive by a heartbeat (see
// [WithHeartbeatTimeout]): one whose process dies leaves the queue when its
// heartbeat lapses, a live one is never evicted, and one that gives up leaves
// at once. A waiter cut off from Redis for longer than the heartbeat timeout
// queues again at the end. A re-entry by the owner does not queue.
//
// Its data in Redis is redisync's own: a FairMutex from NewFairMutex
// excludes neither a Mutex nor a Redisson RFairLock of the same name. One
// from [Client.NewRedissonFairMutex] is kept in Redisson's RFairLock layout
// instead, and shares its lock and queue with Java services.
//
// A FairMutex must not be copied after first use.
type FairMutex struct {
	handle
	l  layout.Fair   // its keys and channel
	rf *layout.RFair // Redisson's layout instead, for NewRedissonFairMutex
	// wait is Redisson's fairLockWaitTimeout in milliseconds, for rf.
	wait string
}

// NewFairMutex returns a handle on the fair mutex called name. Names, options
// and panics are as for [Client.NewMutex].
func (c *Client) NewFairMutex(name string, opts ...Option) *FairMutex {
	c.single("NewFairMutex")
	fm := &FairMutex{l: layout.FairOf(name)}
	c.initHandle(&fm.handle, PrimitiveFairMutex, name, opts)
	fm.key = fm.l.Key
	return fm
}

// NewRedissonFairMutex returns a handle on the fair mutex called name kept
// in the layout of Redisson's RFairLock: the RLock hash at the name, which a
// [Mutex] of that name shares, and Redisson's queue of waiters with their
// eviction times. Go and Java callers (getFairLock) of the name then exclude
// each other and are served in one order, and each side's unlock wakes the
// other's next waiter. Names, options and panics are as for
// [Client.NewMutex]; give it [WithFairLockWaitTimeout] when the Java side
// changes fairLockWaitTimeout.
//
// What the layout gives up (docs/redisson.md): every waiter has Redisson's
// eviction time, predicted from the lease ahead of it plus the wait timeout,
// and an attempt on either side evicts a head whose time has passed. A Go
// waiter's heartbeat keeps its time ahead while it waits, but a dead Go
// waiter is evicted only when that time passes, as a dead Java waiter is
// (minutes with Redisson's defaults), not one heartbeat timeout after it
// died; and a Java acquisition with a wait time of its own
// (tryLock(waitTime, ...)) moves every time by that instead, which may evict
// a live Go waiter, which then queues again at the end ([EventQueued] says
// so). Each waiting call subscribes to a channel of its own, as each Java
// thread does. Scores are the Java clients' clocks on their side and the
// server's on ours: keep them in step.
func (c *Client) NewRedissonFairMutex(name string, opts ...Option) *FairMutex {
	c.single("NewRedissonFairMutex")
	rf := layout.RFairOf(name)
	fm := &FairMutex{rf: &rf}
	c.initHandle(&fm.handle, PrimitiveFairMutex, name, opts)
	fm.key = rf.Key
	fm.wait = strconv.FormatInt(fm.cfg.fairWait.Milliseconds(), 10)
	return fm
}

// ticket returns a new ticket in fm's queue.
func (fm *FairMutex) ticket() *ticket {
	if fm.rf != nil {
		return fm.c.newTicketBy(scripts.RFairHeartbeat, fm.rf.Timeouts, fm.rf.Queue, &fm.cfg, fm.wait)
	}
	return fm.c.newTicket(fm.l.Alive, fm.l.Queue, &fm.cfg)
}

// Lock locks fm. If the lock is already in use or others wait for it, the
// calling goroutine joins the queue and blocks until its turn comes. Redis
// failures do not end the wait: Lock retries with backoff, logging persistent
// failures, until it holds the lock. Lock panics if the Client is closed.
func (fm *FairMutex) Lock() {
	fm.locked(fm.c.acquire(context.Background(), fm.call(context.Background(), waitFree, fm.proto), fm.ticket(), retryForever), "Lock of")
}

// TryLock tries to lock fm and reports whether it succeeded. It makes one
// attempt, which fails while others are queued even if the lock is free, and
// does not wait, neither for the lock nor for another call through the same
// owner that is waiting for Redis; a Redis failure counts as not acquired.
func (fm *FairMutex) TryLock() bool {
	return fm.tried(fm.TryLockContext(context.Background()))
}

// LockContext locks fm in queue order, waiting until the caller's turn comes
// and the lock is free, or until ctx is done; an owner from [WithOwner] in ctx
// re-enters a lock it holds at once. Otherwise it behaves like
// [Mutex.LockContext], leaving no queue entry behind either.
func (fm *FairMutex) LockContext(ctx context.Context) error {
	return fm.c.acquire(ctx, fm.call(ctx, waitFree, fm.proto), fm.ticket(), returnErrors)
}

// TryLockContext makes one attempt to lock fm, for the owner in ctx if any,
// without queueing: it fails while the lock is held or others are queued,
// unless the owner re-enters.
func (fm *FairMutex) TryLockContext(ctx context.Context) (bool, error) {
	return fm.c.tryOnce(ctx, fm.call(ctx, waitFree, fm.proto))
}

// Unlock unlocks fm and wakes the waiter whose turn is next. Unlike
// [Mutex.Unlock] it never hands the lock over within the process (turns are
// kept in Redis); otherwise it behaves the same, panics included.
func (fm *FairMutex) Unlock() {
	fm.unlocked(fm.unlockIn(context.Background(), fm.proto), "redisync: unlock of unlocked mutex %q")
}

// UnlockContext releases one hold of fm by the owner in ctx, waking the next
// waiter with the last, as [Mutex.UnlockContext] does.
func (fm *FairMutex) UnlockContext(ctx context.Context) error { return fm.unlockIn(ctx, fm.proto) }

// ForceUnlock deletes the lock whoever holds it, wakes the waiter whose turn
// is next, and reports whether it was locked. The queue is kept. The hold it
// deleted, if it was taken through this Client, ends as lost.
func (fm *FairMutex) ForceUnlock(ctx context.Context) (bool, error) {
	if fm.rf != nil {
		fields, err := fm.c.direct.ForceUnlockRFair(ctx, fm.rf)
		return fm.forceUnlocked(ctx, fields, err)
	}
	fields, err := fm.c.direct.ForceUnlockFair(ctx, &fm.l)
	return fm.forceUnlocked(ctx, fields, err)
}

// HoldCount returns how many holds the owner in ctx (fm's own owner if ctx has
// none) has on the lock, as Redis records it: 0 when it does not hold it
// through this Client.
func (fm *FairMutex) HoldCount(ctx context.Context) (int, error) { return fm.holdCount(ctx, fair) }

// proto describes owner's hold on fm.
func (fm *FairMutex) proto(owner uint64) *protocol { return fm.handle.proto(owner, fm.newProto) }

func (fm *FairMutex) newProto(owner uint64) *protocol {
	var p *protocol
	if fm.rf != nil {
		p = fm.protocol(fair, fm.rf.Key, owner, PrimitiveFairMutex, fm.rf.Channel, rfairPolicy)
		p.acquire, p.release, p.latch = fm.runAcquireRFair, fm.runReleaseRFair, fm.rf.Latch
	} else {
		p = fm.protocol(fair, fm.l.Key, owner, PrimitiveFairMutex, fm.l.Channel, fairPolicy)
		p.acquire, p.release, p.latch = fm.runAcquire, fm.runRelease, fm.l.Latch
	}
	// The lock hash has Mutex's shape, so Mutex's renewal serves it.
	p.newLease = func(t *term) *lease.Lease { return fm.newLease(t, []string{fm.key}, scripts.MutexRenew) }
	return p
}

// runAcquireRFair is runAcquire in Redisson's layout: a waiting call that
// queued waits on a channel of its own.
func (fm *FairMutex) runAcquireRFair(ctx context.Context, a acquisition) (scripts.Reply, error) {
	rep, err := fm.c.scripts.AcquireRFair(ctx, fm.rf, a.hold(fm.leaseMS), fm.wait, a.queueOnly)
	if err == nil && rep.Outcome == scripts.Busy && a.tk != nil {
		rep.Channel = fm.rf.WaiterChannel(a.tk.ID)
	}
	return rep, err
}

// runReleaseRFair is runRelease in Redisson's layout.
func (fm *FairMutex) runReleaseRFair(ctx context.Context, r release) (scripts.Released, error) {
	return fm.c.scripts.ReleaseRFair(ctx, fm.rf, &r.Release, fm.wait)
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
