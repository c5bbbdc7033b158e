package redisync

import (
	"context"
	"sync"
	"time"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/scripts"
)

// An RWMutex is a reader/writer mutual exclusion lock shared by every process
// that uses the same name on the same Redis: it can be held by any number of
// readers or by a single writer. It is stored in Redisson's RReadWriteLock
// layout, so it excludes and is excluded by a Java service's
// getReadWriteLock(name).
//
// As with [sync.RWMutex], once a writer waits, new readers wait behind it
// (Redisson's readers excepted), so readers cannot starve a writer, and the
// readers waiting when the writer unlocks go in together. Each read hold has
// its own lease: a crashed reader holds writers back for at most that long.
//
// A handle is one owner, as for [Mutex]: its reads are counted together, a
// second Lock waits for the first Unlock, RLock waits while the handle holds
// the write lock, and Lock while the handle's reads are held is an upgrade,
// which would deadlock and panics instead. Give a writer that works alongside
// readers its own handle, or give each party its own owner with [WithOwner]:
// then both sides re-enter, and an owner holding the write lock may take the
// read lock (a downgrade: after Unlock it keeps a read hold).
//
// An RWMutex must not be copied after first use.
type RWMutex struct {
	handle
	l       layout.RW       // its keys and channel
	readers scripts.Readers // the other readers' timeout keys, as its read releases last saw them
}

// NewRWMutex returns a handle on the reader/writer mutex called name. Names,
// options and panics are as for [Client.NewMutex].
func (c *Client) NewRWMutex(name string, opts ...Option) *RWMutex {
	c.single("NewRWMutex")
	rw := &RWMutex{l: layout.RWOf(name)}
	c.initHandle(&rw.handle, PrimitiveRWWrite, name, opts) // errors say RWMutex
	return rw
}

// Lock locks rw for writing, blocking until the lock is available; Redis
// failures are retried. Lock panics if the handle's own reads are held (an
// upgrade) or if the Client is closed.
func (rw *RWMutex) Lock() {
	rw.locked(rw.lock(context.Background(), writeSide, retryForever), "Lock of RWMutex")
}

// RLock locks rw for reading, blocking while a writer holds or waits for the
// lock, the handle's own included (only an owner from [WithOwner] may read
// under its own write lock). Redis failures are retried; RLock panics if the
// Client is closed.
func (rw *RWMutex) RLock() {
	rw.locked(rw.lock(context.Background(), readSide, retryForever), "RLock of RWMutex")
}

// LockContext locks rw for writing for the owner in ctx, like
// [Mutex.LockContext]; it returns an error wrapping ErrUpgrade if that owner
// holds the read lock.
func (rw *RWMutex) LockContext(ctx context.Context) error {
	return rw.lock(ctx, writeSide, returnErrors)
}

// RLockContext locks rw for reading for the owner in ctx, like
// [Mutex.LockContext].
func (rw *RWMutex) RLockContext(ctx context.Context) error {
	return rw.lock(ctx, readSide, returnErrors)
}

// lock locks side s of rw for the owner in ctx; p says how failures end
// the call.
func (rw *RWMutex) lock(ctx context.Context, s rwSide, p persistence) error {
	return rw.c.acquire(ctx, rw.caller(rw.ownerIn(ctx), s, waitTurn), nil, p)
}

// TryLock tries to lock rw for writing and reports whether it succeeded,
// like [Mutex.TryLock].
func (rw *RWMutex) TryLock() bool { return rw.tried(rw.try(context.Background(), writeSide)) }

// TryRLock tries to lock rw for reading and reports whether it succeeded,
// like [Mutex.TryLock].
func (rw *RWMutex) TryRLock() bool { return rw.tried(rw.try(context.Background(), readSide)) }

// TryLockContext makes one attempt to lock rw for writing, for the owner in
// ctx if any, and reports whether it succeeded.
func (rw *RWMutex) TryLockContext(ctx context.Context) (bool, error) { return rw.try(ctx, writeSide) }

// TryRLockContext makes one attempt to lock rw for reading, for the owner in
// ctx if any, and reports whether it succeeded.
func (rw *RWMutex) TryRLockContext(ctx context.Context) (bool, error) { return rw.try(ctx, readSide) }

func (rw *RWMutex) try(ctx context.Context, s rwSide) (bool, error) {
	return rw.c.tryOnce(ctx, rw.caller(rw.ownerIn(ctx), s, oneAttempt))
}

// Unlock unlocks rw for writing. It is a run-time error, and Unlock panics,
// if the handle does not hold the write lock. As with [Mutex.Unlock], a lost
// hold or a failure to reach Redis is not a panic.
func (rw *RWMutex) Unlock() {
	rw.unlocked(rw.unlock(context.Background(), writeSide), "redisync: Unlock of unlocked RWMutex %q")
}

// RUnlock undoes a single RLock call; it does not affect other simultaneous
// readers. It is a run-time error, and RUnlock panics, if the handle does not
// hold the read lock.
func (rw *RWMutex) RUnlock() {
	rw.unlocked(rw.unlock(context.Background(), readSide), "redisync: RUnlock of unlocked RWMutex %q")
}

// UnlockContext releases one write hold of the owner in ctx (the handle's own
// owner if ctx has none), with the errors and the handling of ctx of
// [Mutex.UnlockContext].
func (rw *RWMutex) UnlockContext(ctx context.Context) error { return rw.unlock(ctx, writeSide) }

// RUnlockContext releases one read hold of the owner in ctx (the handle's own
// owner if ctx has none), with the errors and the handling of ctx of
// [Mutex.UnlockContext].
func (rw *RWMutex) RUnlockContext(ctx context.Context) error { return rw.unlock(ctx, readSide) }

// unlock releases one hold of side s of rw by the owner in ctx.
func (rw *RWMutex) unlock(ctx context.Context, s rwSide) error {
	return rw.c.releaseHold(ctx, rw.proto(rw.ownerIn(ctx), s, oneAttempt), 1)
}

// rwSide is a side of an RWMutex: its read locks, or its write lock.
type rwSide uint8

const (
	readSide rwSide = iota
	writeSide
)

// attemptMode says whether a call waits: a waiting writer claims its turn
// (new readers then wait behind it) and takes the claim back when it gives
// up; a single attempt (TryLock) claims nothing.
type attemptMode uint8

const (
	oneAttempt attemptMode = iota
	waitTurn
)

// rwOwner is the owner of a call on rw: its id, and whether it came from
// WithOwner (explicit), which re-enters.
type rwOwner struct {
	id       uint64
	explicit bool
}

// ownerIn returns the owner in ctx, or the handle's own.
func (rw *RWMutex) ownerIn(ctx context.Context) rwOwner {
	id, explicit := ownerOf(ctx, rw.owner)
	return rwOwner{id: id, explicit: explicit}
}

// RLocker returns a [sync.Locker] that implements Lock and Unlock by calling
// rw.RLock and rw.RUnlock.
func (rw *RWMutex) RLocker() sync.Locker { return (*rlocker)(rw) }

type rlocker RWMutex

func (r *rlocker) Lock()   { (*RWMutex)(r).RLock() }
func (r *rlocker) Unlock() { (*RWMutex)(r).RUnlock() }

// ForceUnlock deletes the lock whoever holds it, readers and writer alike,
// wakes every waiter, and reports whether it was locked. The holds it deleted
// that were taken through this Client end as lost.
func (rw *RWMutex) ForceUnlock(ctx context.Context) (bool, error) {
	return rw.forceUnlockHash(ctx, rw.l.Channel, "1")
}

// writerClaim is how long a waiting writer holds new readers back without
// trying again. A writer tries at least three times per claim, so a live
// writer keeps its claim, and a dead one releases the readers within it.
const (
	writerClaim   = 3 * time.Second
	writerClaimMS = "3000"
)

// caller makes a call of owner o on side s of rw: an owner from WithOwner
// re-enters; a writer that waits (m) claims its turn and takes the claim
// back when it gives up.
func (rw *RWMutex) caller(o rwOwner, s rwSide, m attemptMode) *call {
	a := &call{p: rw.proto(o, s, m), n: 1, mode: share}
	switch {
	case o.explicit:
		a.mode = reenter
	case s == writeSide:
		a.mode = waitFree
	}
	if s == writeSide {
		a.check = func() error {
			if rw.holdsRead(o.id) {
				return lockError(rw.primitive, rw.name, ErrUpgrade)
			}
			return nil
		}
	}
	if s == writeSide && m == waitTurn {
		a.left = func(ctx context.Context) { rw.leave(ctx, a.field) }
	}
	return a
}

// leave takes back a waiting writer's claim (its id is the field its call
// asked for), so that the readers it held back do not wait for the claim to
// lapse.
func (rw *RWMutex) leave(ctx context.Context, id string) {
	if id == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupBudget)
	defer cancel()
	err := rw.c.scripts.LeaveWriters(ctx, &rw.l, id)
	if err != nil {
		rw.cfg.logger.Warn("redisync: a writer that gave up could not take back its claim; readers wait until it lapses",
			"name", rw.name, "error", err)
	}
}

// holdsRead reports whether owner holds rw's read lock through this Client.
func (rw *RWMutex) holdsRead(owner uint64) bool {
	_, field := rw.c.holds.current(holdKey{kind: shared, name: rw.name, owner: owner})
	return field != ""
}

// proto describes owner o's hold on side s of rw; a writer that waits (m)
// claims its turn when it finds the lock taken.
func (rw *RWMutex) proto(o rwOwner, s rwSide, m attemptMode) *protocol {
	op := rw.protocol(shared, rw.name, o.id, PrimitiveRWRead, rw.l.Channel, readPolicy)
	op.latch = rw.l.Latch
	if s == writeSide {
		op.key.kind, op.primitive, op.suffix = exclusive, PrimitiveRWWrite, layout.WriteSuffix
		op.policy = writePolicy
		op.acquire = func(ctx context.Context, a acquisition) (scripts.Reply, error) {
			r, err := rw.c.scripts.AcquireWrite(ctx, &rw.l, a.hold(rw.leaseMS), writerClaimMS, m == waitTurn)
			return claimWait(r, err)
		}
		op.release = func(ctx context.Context, r release) (scripts.Released, error) {
			return rw.c.scripts.ReleaseWrite(ctx, &rw.l, &r.Release)
		}
		op.newLease = rw.writeLease
		return op
	}
	op.acquire = func(ctx context.Context, a acquisition) (scripts.Reply, error) {
		writer := ""
		if o.explicit {
			_, writer = rw.c.holds.current(holdKey{kind: exclusive, name: rw.name, owner: o.id}) // it may read under its own write lock
		}
		// An owner re-entering must not wait behind a writer waiting for it.
		r, err := rw.c.scripts.AcquireRead(ctx, &rw.l, a.hold(rw.leaseMS), writer, o.explicit && a.count > 0)
		return claimWait(r, err)
	}
	op.release = func(ctx context.Context, r release) (scripts.Released, error) {
		return rw.c.scripts.ReleaseRead(ctx, &rw.l, &r.Release, &rw.readers)
	}
	op.newLease = rw.readLease
	return op
}

// readRenewEvery bounds the time between the renewals of a read hold: a
// Redisson reader's watchdog may shorten the lock's expiry to its own lease,
// and a renewal must restore ours within that lease, in case the Java reader
// dies. A variable only so that tests can shorten it.
var readRenewEvery = 5 * time.Second

// writeLease describes the lease of term t, a new write hold, for the
// scheduler.
func (rw *RWMutex) writeLease(t *term) *lease.Lease {
	l := rw.newLease(t, []string{rw.name}, scripts.RWRenew)
	l.Keys, l.Args = scripts.WriteRenewal(&rw.l, t.field, rw.leaseMS)
	return l
}

// readHeadroom is how many holds beyond the count it was last known to have
// a read hold's renewals declare timeout keys for: a hold entered more often
// makes the script ask for the others, and is renewed once more with them
// (see lease.Lease.Grow).
const readHeadroom = 2

// readLease describes the lease of term t, a new read hold, for the
// scheduler. A fixed lease is renewed too, without being extended: its
// renewals restore the lock's expiry from its timeout keys, and find a hold
// gone (reporting the loss) instead of waiting for the deadline.
func (rw *RWMutex) readLease(t *term) *lease.Lease {
	l := rw.newLease(t, []string{rw.name}, scripts.RWRenew)
	l.Every = readRenewEvery
	leaseMS := rw.leaseMS
	if l.Renew == nil {
		l.Renew, l.Fixed = scripts.RWRenew, true
		leaseMS = "0" // see rw_renew.lua
	}
	field := t.field
	l.Grow = func(n int) ([]string, []string) { return scripts.ReadRenewal(&rw.l, field, leaseMS, n+readHeadroom) }
	l.Keys, l.Args = l.Grow(1) // a new hold's count
	return l
}

// claimWait bounds a busy reply's wait to a third of a writer's claim: a
// waiting writer comes back in time to keep its claim, and a waiting reader
// finds the lock free soon after a change that published nothing (a Redisson
// writer's downgrade to a read lock).
func claimWait(r scripts.Reply, err error) (scripts.Reply, error) {
	if r.Outcome == scripts.Busy && (r.Value < 0 || r.Value > writerClaim.Milliseconds()/3) {
		r.Value = writerClaim.Milliseconds() / 3
	}
	return r, err
}
