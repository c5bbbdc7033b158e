package redisync

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/scripts"
)

// writerClaim is how long a waiting writer holds new readers back without
// trying again. A writer tries at least three times per claim, so a live
// writer keeps its claim, and a dead one releases the readers within it.
const (
	writerClaim   = 3 * time.Second
	writerClaimMS = "3000"
)

// rwAcquirer makes the acquire attempts of one call of one owner on one
// side of an RWMutex. explicit marks an owner from WithOwner, which
// re-enters; waits marks a writer that will wait, and so claims its turn.
type rwAcquirer struct {
	rw       *RWMutex
	owner    uint64
	explicit bool
	write    bool
	waits    bool
	single   bool // a TryLock: one attempt that does not wait for the owner's other calls
	call     holdCall
}

func (a *rwAcquirer) try(ctx context.Context) (attempt, error) {
	rw := a.rw
	mode := reenter
	switch {
	case a.write && rw.holdsRead(a.owner):
		return attempt{}, lockError(rw.name, ErrUpgrade)
	case a.write && !a.explicit:
		mode = waitFree
	case !a.write && !a.explicit:
		mode = share
	}
	res, t, _, err := rw.c.tryHold(ctx, rw.op(a.owner, a.write, a.explicit, a.waits), mode, &a.call, a.single)
	if t != nil {
		rw.cur.Store(t)
	}
	return res, err
}

func (a *rwAcquirer) undo(ctx context.Context) {
	a.rw.c.undoHold(ctx, a.rw.op(a.owner, a.write, a.explicit, a.waits), &a.call)
}

func (a *rwAcquirer) primitive() string { return rwPrimitive(a.write) }

// rwPrimitive names a side of an RWMutex in events.
func rwPrimitive(write bool) string {
	if write {
		return PrimitiveRWWrite
	}
	return PrimitiveRWRead
}

// leave takes back a waiting writer's claim (its id is the field its call
// asked for), so that the readers it held back do not wait for the claim to
// lapse.
func (a *rwAcquirer) leave(ctx context.Context) {
	if !a.waits || a.call.field == "" {
		return
	}
	rw := a.rw
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupBudget)
	defer cancel()
	err := rw.c.scripts.Exec(ctx, scripts.Call{
		Script:    scripts.RWWriterLeave,
		Keys:      []string{rw.writers, rw.channel},
		Args:      []string{a.call.field, rw.c.publish},
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

// op describes owner's read or write hold on rw; a writer that waits claims
// its turn when it finds the lock taken.
func (rw *RWMutex) op(owner uint64, write, explicit, waits bool) *holdOp {
	op := &holdOp{cfg: &rw.cfg, primitive: rwPrimitive(write), channel: rw.channel, wakeAll: true}
	if write {
		op.key = holdKey{kind: exclusive, name: rw.name, owner: owner}
		op.suffix = ":write"
		claim := "0"
		if waits {
			claim = "1"
		}
		op.acquire = func(ctx context.Context, field string, count int) (int, int64, error) {
			return rw.run(ctx, scripts.RWWriteLock, []string{rw.name, rw.writers, rw.latch},
				rw.leaseMS, field, strconv.Itoa(count), field, writerClaimMS, claim)
		}
		op.release = func(ctx context.Context, r release) (int64, error) {
			var argv [6]string
			return rw.c.runRelease(ctx, scripts.Call{Script: scripts.RWWriteUnlock,
				Keys: []string{rw.name, rw.channel, rw.latch}, Args: r.argv(&argv, rw.c.publish)})
		}
		op.newLease = func(t *term) *lease.Lease { return rw.newLease(t, "") }
		return op
	}
	op.key = holdKey{kind: shared, name: rw.name, owner: owner}
	op.acquire = func(ctx context.Context, field string, count int) (int, int64, error) {
		pass, writer := "0", ""
		if explicit {
			if count > 0 {
				pass = "1" // an owner re-entering must not wait behind a writer waiting for it
			}
			writer = rw.c.heldField(holdKey{kind: exclusive, name: rw.name, owner: owner}) // it may read under its own write lock
		}
		return rw.run(ctx, scripts.RWReadLock, []string{rw.name, rw.writers, rw.timeouts(field), rw.latch},
			rw.leaseMS, field, writer, strconv.Itoa(count), pass)
	}
	op.release = func(ctx context.Context, r release) (int64, error) {
		var argv [6]string
		return rw.c.runRelease(ctx, scripts.Call{Script: scripts.RWReadUnlock,
			Keys: []string{rw.name, rw.channel, rw.latch, rw.timeouts(r.field)}, Args: append(r.argv(&argv, rw.c.publish), rw.tagged)})
	}
	op.newLease = func(t *term) *lease.Lease { return rw.newLease(t, rw.timeouts(t.field)) }
	return op
}

// timeouts returns the prefix of the read timeout keys of the read hold
// field, in Redisson's layout: "{name}:<field>:rwlock_timeout".
func (rw *RWMutex) timeouts(field string) string {
	return rw.tagged + ":" + field + ":rwlock_timeout"
}

// run runs an acquire script, which replies nil (acquired), -3 (gone), -4
// (refused), or how long to wait in milliseconds.
func (rw *RWMutex) run(ctx context.Context, s *scripts.Script, keys []string, args ...string) (int, int64, error) {
	wait, err := rw.c.scripts.Exec(ctx, scripts.Call{Script: s, Keys: keys, Args: args}).AsInt64()
	switch {
	case rueidis.IsRedisNil(err):
		return acquired, 0, nil
	case err != nil:
		return 0, 0, err
	case wait == -3:
		return gone, 0, nil
	case wait == -4:
		return refused, 0, nil
	case wait < 0, s == scripts.RWWriteLock && wait > writerClaim.Milliseconds()/3:
		// A writer comes back in time to keep its claim.
		return busy, writerClaim.Milliseconds() / 3, nil
	}
	return busy, wait, nil
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
