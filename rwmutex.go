package redisync

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/notify"
	"github.com/go-redisync/redisync/internal/scripts"
	"github.com/redis/rueidis"
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
	handle
	l layout.RW // its keys and channel
}

// NewRWMutex returns a handle on the reader/writer mutex called name. Names,
// options and panics are as for [Client.NewMutex].
func (c *Client) NewRWMutex(name string, opts ...Option) *RWMutex {
	rw := &RWMutex{l: layout.RWOf(name)}
	c.initHandle(&rw.handle, name, opts)
	return rw
}

// Lock locks rw for writing. If the lock is already locked for reading or
// writing, Lock blocks until the lock is available; Redis failures are
// retried. Lock panics if the handle's own reads are held (an upgrade) or
// if the Client is closed.
func (rw *RWMutex) Lock() {
	rw.locked(rw.lock(context.Background(), rw.owner, false, true, true), "Lock of RWMutex")
}

// RLock locks rw for reading. It blocks while a writer holds the lock or
// waits for it, the handle's own writer included (as with [sync.RWMutex]: only
// an owner from [WithOwner] may read under its own write lock). Redis failures
// are retried; RLock panics if the Client is closed.
func (rw *RWMutex) RLock() {
	rw.locked(rw.lock(context.Background(), rw.owner, false, false, true), "RLock of RWMutex")
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
	return rw.c.acquire(ctx, rw.caller(owner, explicit, write, write), nil, forever)
}

// TryLock tries to lock rw for writing and reports whether it succeeded,
// with one attempt that does not wait (see [Mutex.TryLock]). A Redis failure
// counts as not acquired.
func (rw *RWMutex) TryLock() bool { return rw.tried(rw.try(context.Background(), true)) }

// TryRLock tries to lock rw for reading and reports whether it succeeded,
// with one attempt that does not wait (see [Mutex.TryLock]). A Redis failure
// counts as not acquired.
func (rw *RWMutex) TryRLock() bool { return rw.tried(rw.try(context.Background(), false)) }

// TryLockContext makes one attempt to lock rw for writing, for the owner in
// ctx if any, and reports whether it succeeded.
func (rw *RWMutex) TryLockContext(ctx context.Context) (bool, error) { return rw.try(ctx, true) }

// TryRLockContext makes one attempt to lock rw for reading, for the owner in
// ctx if any, and reports whether it succeeded.
func (rw *RWMutex) TryRLockContext(ctx context.Context) (bool, error) { return rw.try(ctx, false) }

func (rw *RWMutex) try(ctx context.Context, write bool) (bool, error) {
	owner, explicit := ownerOf(ctx, rw.owner)
	return rw.c.tryOnce(ctx, rw.caller(owner, explicit, write, false))
}

// Unlock unlocks rw for writing. It is a run-time error, and Unlock panics,
// if the handle does not hold the write lock. As with [Mutex.Unlock], a lost
// hold or a failure to reach Redis is not a panic.
func (rw *RWMutex) Unlock() {
	rw.unlocked(rw.c.releaseHold(context.Background(), rw.proto(rw.owner, true, false, false), 1),
		"redisync: Unlock of unlocked RWMutex")
}

// RUnlock undoes a single RLock call; it does not affect other simultaneous
// readers. It is a run-time error, and RUnlock panics, if the handle does not
// hold the read lock.
func (rw *RWMutex) RUnlock() {
	rw.unlocked(rw.c.releaseHold(context.Background(), rw.proto(rw.owner, false, false, false), 1),
		"redisync: RUnlock of unlocked RWMutex")
}

// UnlockContext releases one write hold of the owner in ctx (the handle's own
// owner if ctx has none), with the errors and the handling of ctx of
// [Mutex.UnlockContext].
func (rw *RWMutex) UnlockContext(ctx context.Context) error {
	owner, explicit := ownerOf(ctx, rw.owner)
	return rw.c.releaseHold(ctx, rw.proto(owner, true, explicit, false), 1)
}

// RUnlockContext releases one read hold of the owner in ctx (the handle's own
// owner if ctx has none), with the errors and the handling of ctx of
// [Mutex.UnlockContext].
func (rw *RWMutex) RUnlockContext(ctx context.Context) error {
	owner, explicit := ownerOf(ctx, rw.owner)
	return rw.c.releaseHold(ctx, rw.proto(owner, false, explicit, false), 1)
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
	return rw.c.forceUnlock(ctx, rw.name, rw.l.Channel, "1")
}

// IsLocked reports whether anyone holds the lock, for reading or writing.
func (rw *RWMutex) IsLocked(ctx context.Context) (bool, error) { return rw.c.exists(ctx, rw.name) }

// TTL returns how long the lock will last unless renewed, as [Mutex.TTL].
func (rw *RWMutex) TTL(ctx context.Context) (time.Duration, error) { return rw.c.ttl(ctx, rw.name) }

// writerClaim is how long a waiting writer holds new readers back without
// trying again. A writer tries at least three times per claim, so a live
// writer keeps its claim, and a dead one releases the readers within it.
const (
	writerClaim   = 3 * time.Second
	writerClaimMS = "3000"
)

// caller makes a call of owner on one side of rw: explicit marks an owner
// from WithOwner, which re-enters; a writer that waits claims its turn (new
// readers then wait behind it) and takes the claim back when it gives up.
func (rw *RWMutex) caller(owner uint64, explicit, write, waits bool) *caller {
	a := &caller{p: rw.proto(owner, write, explicit, waits), n: 1, mode: share}
	switch {
	case explicit:
		a.mode = reenter
	case write:
		a.mode = waitFree
	}
	if write {
		a.check = func() error {
			if rw.holdsRead(owner) {
				return lockError(rw.name, ErrUpgrade)
			}
			return nil
		}
	}
	if write && waits {
		a.left = func(ctx context.Context) { rw.leave(ctx, a.call.field) }
	}
	return a
}

// rwPrimitive names a side of an RWMutex in events.
func rwPrimitive(write bool) Primitive {
	if write {
		return PrimitiveRWWrite
	}
	return PrimitiveRWRead
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
	err := rw.c.scripts.Exec(ctx, scripts.Call{
		Script:    scripts.RWWriterLeave,
		Keys:      []string{rw.l.Writers, rw.l.Channel},
		Args:      []string{id, rw.c.publish},
		Retryable: true, // leaving twice leaves once
	}).Error()
	if err != nil {
		rw.cfg.logger.Warn("redisync: a writer that gave up could not take back its claim; readers wait until it lapses",
			"name", rw.name, "error", err)
	}
}

// holdsRead reports whether owner holds rw's read lock through this Client.
func (rw *RWMutex) holdsRead(owner uint64) bool {
	return rw.c.heldField(holdKey{kind: shared, name: rw.name, owner: owner}) != ""
}

// proto describes owner's read or write hold on rw; a writer that waits
// claims its turn when it finds the lock taken.
func (rw *RWMutex) proto(owner uint64, write, explicit, waits bool) *protocol {
	op := &protocol{name: rw.name, cfg: &rw.cfg, primitive: rwPrimitive(write), channel: rw.l.Channel,
		policy: notify.Redisson, wakeAll: true, cur: &rw.cur}
	if write {
		op.key = holdKey{kind: exclusive, name: rw.name, owner: owner}
		op.suffix = layout.WriteSuffix
		claim := "0"
		if waits {
			claim = "1"
		}
		op.acquire = func(ctx context.Context, a acquisition) (reply, error) {
			return rw.run(ctx, scripts.RWWriteLock, []string{rw.name, rw.l.Writers, rw.l.Latch},
				rw.leaseMS, a.field, strconv.Itoa(a.count), a.field, writerClaimMS, claim)
		}
		op.release = func(ctx context.Context, r release) (releaseReply, error) {
			var argv [6]string
			n, err := rw.c.runRelease(ctx, scripts.Call{Script: scripts.RWWriteUnlock,
				Keys: []string{rw.name, rw.l.Channel, rw.l.Latch}, Args: r.argv(&argv, rw.c.publish)})
			return releaseReply{status: n}, err
		}
		op.newLease = func(t *term) *lease.Lease { return rw.newLease(t, "") }
		return op
	}
	op.key = holdKey{kind: shared, name: rw.name, owner: owner}
	op.acquire = func(ctx context.Context, a acquisition) (reply, error) {
		pass, writer := "0", ""
		if explicit {
			if a.count > 0 {
				pass = "1" // an owner re-entering must not wait behind a writer waiting for it
			}
			writer = rw.c.heldField(holdKey{kind: exclusive, name: rw.name, owner: owner}) // it may read under its own write lock
		}
		return rw.run(ctx, scripts.RWReadLock, []string{rw.name, rw.l.Writers, rw.l.Timeouts(a.field), rw.l.Latch},
			rw.leaseMS, a.field, writer, strconv.Itoa(a.count), pass)
	}
	op.release = func(ctx context.Context, r release) (releaseReply, error) {
		var argv [6]string
		n, err := rw.c.runRelease(ctx, scripts.Call{Script: scripts.RWReadUnlock,
			Keys: []string{rw.name, rw.l.Channel, rw.l.Latch, rw.l.Timeouts(r.field)}, Args: append(r.argv(&argv, rw.c.publish), rw.l.Tagged)})
		return releaseReply{status: n}, err
	}
	op.newLease = func(t *term) *lease.Lease { return rw.newLease(t, rw.l.Timeouts(t.field)) }
	return op
}

// run runs an acquire script, which replies nil (acquired), -3 (gone), -4
// (refused), or how long to wait in milliseconds.
func (rw *RWMutex) run(ctx context.Context, s *scripts.Script, keys []string, args ...string) (reply, error) {
	wait, err := rw.c.scripts.Exec(ctx, scripts.Call{Script: s, Keys: keys, Args: args}).AsInt64()
	switch {
	case rueidis.IsRedisNil(err):
		return reply{outcome: acquired}, nil
	case err != nil || wait == -3 || wait == -4:
		return lockReply(wait, err)
	case wait < 0, s == scripts.RWWriteLock && wait > writerClaim.Milliseconds()/3:
		// A writer comes back in time to keep its claim.
		return reply{outcome: busy, value: writerClaim.Milliseconds() / 3}, nil
	}
	return reply{outcome: busy, value: wait}, nil
}

// newLease describes the lease of term t, a new read or write hold, for the
// scheduler; timeouts is a reader's timeout key prefix.
func (rw *RWMutex) newLease(t *term, timeouts string) *lease.Lease {
	l := &t.own
	t.args = [3]string{t.field, rw.leaseMS, timeouts}
	*l = lease.Lease{
		Key:  rw.name,
		Keys: []string{rw.name},
		Args: t.args[:],
		TTL:  rw.cfg.leaseTTL(),
		Lost: t,
	}
	if rw.cfg.lease == 0 {
		l.Renew = scripts.RWRenew
	}
	return l
}
