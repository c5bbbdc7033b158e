package redisync

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redisync/redisync/internal/keys"
)

// An RWMutex is a reader/writer mutual exclusion lock shared by every process
// that uses the same name on the same Redis: it can be held by any number of
// readers or by a single writer. It is stored in Redisson's RReadWriteLock
// layout, so it excludes and is excluded by a Java service's
// getReadWriteLock(name).
//
// As with [sync.RWMutex], once a writer waits, new readers wait behind it, so
// a stream of readers cannot starve a writer (the waiting writer keeps a claim
// in Redis, renewed while it waits; Redisson's readers do not see it), and the
// readers waiting when the writer unlocks go in together.
//
// Each read hold has its own lease, renewed while its process lives: a
// crashed reader holds the writers back for at most its own lease.
//
// A handle is one owner, as for [Mutex]: its reads are counted together, a
// second Lock waits for the first Unlock, RLock waits while the handle holds
// the write lock, and Lock while the handle's reads are held is an upgrade,
// which would deadlock and panics instead. Give a
// writer that works alongside readers its own handle (handles are cheap), or
// give each party its own owner with [WithOwner]. With an explicit owner both
// sides re-enter, and an owner holding the write lock may take the read lock
// (a downgrade: after Unlock it keeps a read hold).
//
// An RWMutex must not be copied after first use.
type RWMutex struct {
	_ noCopy

	c       *Client
	cfg     config
	name    string
	channel string
	writers string // the set of waiting writers
	tagged  string // "{name}": the prefix of read timeout keys
	latch   string
	owner   uint64
	leaseMS string

	cur atomic.Pointer[term] // the hold this handle took last
}

// NewRWMutex returns a handle on the reader/writer mutex called name. Names,
// options and panics are as for [Client.NewMutex].
func (c *Client) NewRWMutex(name string, opts ...Option) *RWMutex {
	cfg := c.handleConfig(name, opts)
	return &RWMutex{
		c:       c,
		cfg:     cfg,
		name:    name,
		channel: keys.Aux(keys.RWChannelPrefix, name),
		writers: keys.Aux(keys.RWWritersPrefix, name),
		tagged:  keys.Tagged(name),
		latch:   keys.Aux(keys.UnlockLatchPrefix, name),
		owner:   lastOwner.Add(1),
		leaseMS: strconv.FormatInt(cfg.leaseTTL().Milliseconds(), 10),
	}
}

// Name returns the name of the lock: its key in Redis.
func (rw *RWMutex) Name() string { return rw.name }

// Lock locks rw for writing. If the lock is already locked for reading or
// writing, Lock blocks until the lock is available; Redis failures are
// retried. Lock panics if the handle's own reads are held (an upgrade) or
// if the Client is closed.
func (rw *RWMutex) Lock() {
	rw.must(rw.lock(context.Background(), rw.owner, false, true, true), "Lock")
}

// RLock locks rw for reading. It blocks while a writer holds the lock or
// waits for it, the handle's own writer included (as with [sync.RWMutex]: only
// an owner from [WithOwner] may read under its own write lock). Redis failures
// are retried; RLock panics if the Client is closed.
func (rw *RWMutex) RLock() {
	rw.must(rw.lock(context.Background(), rw.owner, false, false, true), "RLock")
}

// must turns the error of a Lock or RLock into a panic: only misuse ends them.
func (rw *RWMutex) must(err error, method string) {
	switch {
	case errors.Is(err, ErrUpgrade):
		panic("redisync: " + method + " of RWMutex " + strconv.Quote(rw.name) + " while the handle holds its read lock (upgrade)")
	case err != nil:
		panic("redisync: " + method + " of RWMutex " + strconv.Quote(rw.name) + " on a closed Client")
	}
}

// LockContext locks rw for writing, waiting until the lock is available or
// ctx is done, for the owner in ctx if any. It returns an error wrapping
// ErrUpgrade if that owner holds the read lock. Otherwise it behaves like
// [Mutex.LockContext].
func (rw *RWMutex) LockContext(ctx context.Context) error {
	owner, explicit := ownerOf(ctx, rw.owner)
	return rw.lock(ctx, owner, explicit, true, false)
}

// RLockContext locks rw for reading, waiting until the lock is available or
// ctx is done, for the owner in ctx if any. Otherwise it behaves like
// [Mutex.LockContext].
func (rw *RWMutex) RLockContext(ctx context.Context) error {
	owner, explicit := ownerOf(ctx, rw.owner)
	return rw.lock(ctx, owner, explicit, false, false)
}

// lock is the waiter loop of both sides; forever is set for Lock and RLock.
func (rw *RWMutex) lock(ctx context.Context, owner uint64, explicit, write, forever bool) error {
	a := &rwAcquirer{rw: rw, owner: owner, explicit: explicit, write: write, waits: write}
	return rw.c.acquire(ctx, rw.name, rw.channel, a, forever, &rw.cfg)
}

// TryLock tries to lock rw for writing and reports whether it succeeded,
// with one attempt that does not wait (see [Mutex.TryLock]). A Redis failure
// counts as not acquired.
func (rw *RWMutex) TryLock() bool { return rw.tryLogged(true) }

// TryRLock tries to lock rw for reading and reports whether it succeeded,
// with one attempt that does not wait (see [Mutex.TryLock]). A Redis failure
// counts as not acquired.
func (rw *RWMutex) TryRLock() bool { return rw.tryLogged(false) }

func (rw *RWMutex) tryLogged(write bool) bool {
	ok, err := rw.try(context.Background(), write)
	if err != nil && !errors.Is(err, ErrClosed) {
		rw.cfg.logger.Warn("redisync: TryLock failed", "name", rw.name, "error", err)
	}
	return ok
}

// TryLockContext makes one attempt to lock rw for writing, for the owner in
// ctx if any, and reports whether it succeeded.
func (rw *RWMutex) TryLockContext(ctx context.Context) (bool, error) { return rw.try(ctx, true) }

// TryRLockContext makes one attempt to lock rw for reading, for the owner in
// ctx if any, and reports whether it succeeded.
func (rw *RWMutex) TryRLockContext(ctx context.Context) (bool, error) { return rw.try(ctx, false) }

func (rw *RWMutex) try(ctx context.Context, write bool) (bool, error) {
	if rw.c.isClosed() {
		return false, lockError(rw.name, ErrClosed)
	}
	owner, explicit := ownerOf(ctx, rw.owner)
	a := &rwAcquirer{rw: rw, owner: owner, explicit: explicit, write: write, single: true}
	res, err := a.try(ctx)
	observeTry(ctx, &rw.cfg, a.primitive(), rw.name, res)
	if err != nil && ambiguous(err) {
		a.undo(ctx)
	}
	if ctx.Err() != nil && !res.acquired {
		return false, ctx.Err()
	}
	return res.acquired, err
}

// Unlock unlocks rw for writing. It is a run-time error, and Unlock panics,
// if the handle does not hold the write lock. As with [Mutex.Unlock], a lost
// hold or a failure to reach Redis is not a panic.
func (rw *RWMutex) Unlock() { rw.unlockOrPanic(true, "redisync: Unlock of unlocked RWMutex") }

// RUnlock undoes a single RLock call; it does not affect other simultaneous
// readers. It is a run-time error, and RUnlock panics, if the handle does not
// hold the read lock.
func (rw *RWMutex) RUnlock() { rw.unlockOrPanic(false, "redisync: RUnlock of unlocked RWMutex") }

func (rw *RWMutex) unlockOrPanic(write bool, misuse string) {
	err := rw.c.releaseHold(context.Background(), rw.op(rw.owner, write, false, false))
	switch {
	case errors.Is(err, ErrNotHeld):
		panic(misuse)
	case err != nil && !errors.Is(err, ErrLockLost) && !errors.Is(err, ErrClosed):
		rw.cfg.logger.Warn("redisync: unlock failed; the hold expires with its lease", "name", rw.name, "error", err)
	}
}

// UnlockContext releases one write hold of the owner in ctx (the handle's own
// owner if ctx has none), with the errors and the handling of ctx of
// [Mutex.UnlockContext].
func (rw *RWMutex) UnlockContext(ctx context.Context) error {
	owner, explicit := ownerOf(ctx, rw.owner)
	return rw.c.releaseHold(ctx, rw.op(owner, true, explicit, false))
}

// RUnlockContext releases one read hold of the owner in ctx (the handle's own
// owner if ctx has none), with the errors and the handling of ctx of
// [Mutex.UnlockContext].
func (rw *RWMutex) RUnlockContext(ctx context.Context) error {
	owner, explicit := ownerOf(ctx, rw.owner)
	return rw.c.releaseHold(ctx, rw.op(owner, false, explicit, false))
}

// RLocker returns a [sync.Locker] that implements Lock and Unlock by calling
// rw.RLock and rw.RUnlock.
func (rw *RWMutex) RLocker() sync.Locker { return (*rlocker)(rw) }

type rlocker RWMutex

func (r *rlocker) Lock()   { (*RWMutex)(r).RLock() }
func (r *rlocker) Unlock() { (*RWMutex)(r).RUnlock() }

// Done returns a channel that is closed when the hold (read or write) taken
// by the latest successful lock through rw ends; a closed channel if there
// has been none. See [Mutex.Done].
func (rw *RWMutex) Done() <-chan struct{} { return rw.cur.Load().doneChan() }

// Err reports how the hold taken by the latest lock through rw ended, as
// [Mutex.Err] does.
func (rw *RWMutex) Err() error { return rw.cur.Load().errOrNil() }

// ForceUnlock deletes the lock whoever holds it, readers and writer alike,
// wakes every waiter, and reports whether it was locked. The holds it deleted
// that were taken through this Client end as lost.
func (rw *RWMutex) ForceUnlock(ctx context.Context) (bool, error) {
	return rw.c.forceUnlock(ctx, rw.name, rw.channel, "1")
}

// IsLocked reports whether anyone holds the lock, for reading or writing.
func (rw *RWMutex) IsLocked(ctx context.Context) (bool, error) { return rw.c.exists(ctx, rw.name) }

// TTL returns how long the lock will last unless renewed, as [Mutex.TTL].
func (rw *RWMutex) TTL(ctx context.Context) (time.Duration, error) { return rw.c.ttl(ctx, rw.name) }
