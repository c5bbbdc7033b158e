package redisync

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/scripts"
)

// fairAcquirer makes the acquire attempts of one call of one owner on a
// FairMutex. With reentrant set, an owner that holds the lock takes it again
// without queueing.
type fairAcquirer struct {
	fm        *FairMutex
	owner     uint64
	reentrant bool
	call      holdCall
}

func (a *fairAcquirer) primitive() string { return PrimitiveFairMutex }

func (a *fairAcquirer) holdKey() holdKey {
	return holdKey{kind: fair, name: a.fm.key, owner: a.owner}
}

// try makes one attempt; with a nil ticket it does not queue (TryLock), and
// does not wait for another call of the owner either.
func (a *fairAcquirer) try(ctx context.Context, tk *ticket) (attempt, error) {
	fm, c := a.fm, a.fm.c
	h := c.ref(a.holdKey(), true)
	defer c.unref(h)
	if tk == nil {
		if !h.op.tryLock() {
			return attempt{}, nil
		}
	} else if err := h.op.lock(ctx); err != nil {
		return attempt{}, err
	}
	defer h.op.unlock()
	mode := "own"
	var free <-chan struct{}
	field, count := h.field, 0
	if h.count > 0 {
		switch {
		case a.reentrant:
			if ended, err := h.term.Load().result(); ended {
				return attempt{}, err
			}
			count = h.count
			a.call.reentered, a.call.base, a.call.reentryUnknown = field, count, false
		case tk == nil:
			return attempt{}, nil // held by this very owner: TryLock fails
		default:
			// Another call of this owner holds the lock (a second Lock on a
			// handle). Queue now, so that the turn is fixed by arrival, but
			// never take until that hold is released here.
			mode, free = "queue", h.freeChan()
		}
	}
	if count == 0 {
		if a.call.field == "" {
			a.call.field = c.newField(a.owner, "")
		}
		field = a.call.field
	}
	id, hbMS := "", "0"
	if tk != nil {
		id, hbMS = tk.id, tk.hbMS()
	}
	sent := time.Now()
	a.call.sent = true
	reply, err := c.scripts.Exec(ctx, scripts.Call{
		Script: scripts.FairAcquire,
		Keys:   []string{fm.key, fm.queue, fm.alive, fm.channel, fm.latch},
		Args:   []string{fm.leaseMS, field, strconv.Itoa(count), id, hbMS, c.publish, mode},
	}).AsIntSlice()
	if err == nil && len(reply) != 2 {
		err = fmt.Errorf("fair_acquire replied %d values", len(reply))
	}
	if err != nil {
		if ambiguous(err) {
			a.call.reentryUnknown = count > 0
			a.call.firstUnknown = a.call.firstUnknown || count == 0
		}
		return attempt{}, lockError(fm.name, err)
	}
	switch reply[0] {
	case 1:
	case -3:
		t := h.term.Load()
		c.leases.Remove(t.lease)
		c.lost(t, fm.name, &fm.cfg, errHoldGone)
		_, err := t.result()
		return attempt{}, err
	case -4:
		return attempt{}, lockError(fm.name, errRefused)
	default:
		if tk != nil {
			tk.queued(sent)
		}
		return attempt{wait: waitMS(reply[1]), free: free}, nil
	}
	var t *term
	if count == 0 {
		t = newObservedTerm(c, &fm.cfg, PrimitiveFairMutex, fm.name)
		t.field = field
		t.lease = fm.newLease(t)
		h.field, h.ambiguous = field, a.call.firstUnknown
		c.begin(h, t, sent)
	} else {
		t = h.term.Load()
		h.count++
		c.leases.Touch(t.lease, sent)
	}
	fm.cur.Store(t)
	if c.isClosed() {
		// Close may have ended holds before this one was recorded.
		t.end(lockError(fm.name, ErrClosed))
	}
	return attempt{acquired: true, reentered: count > 0}, nil
}

// leave takes the ticket (if any) out of the queue and gives back what an
// attempt of unknown outcome may have taken: the hold its first acquire asked
// for is released and its latch left to refuse a late copy, a re-entry's
// count is set back. All of it is idempotent, and the script passes the turn
// on when the leaving waiter was the head of a free lock.
func (a *fairAcquirer) leave(ctx context.Context, tk *ticket) {
	fm := a.fm
	if !a.call.sent {
		return // no attempt reached Redis: neither a queue entry nor a hold
	}
	// The first acquire's field is this call's alone; only a re-entry's
	// undo needs the owner's record, and so waits for its other calls.
	r := release{field: a.call.field, from: 1, to: 0, latch: tombstoneTTL, undo: a.call.firstUnknown}
	if !a.call.firstUnknown && a.call.reentryUnknown {
		c := fm.c
		h := c.ref(a.holdKey(), true)
		defer c.unref(h)
		_ = h.op.lock(context.Background())
		defer h.op.unlock()
		if h.count > 0 && h.field == a.call.reentered {
			r = release{field: h.field, from: a.call.base + 1, to: a.call.base}
		}
	}
	id := ""
	if tk != nil {
		id = tk.id
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupBudget)
	defer cancel()
	_, head, err := fm.release(ctx, r, id)
	if err != nil {
		fm.cfg.logger.Warn("redisync: could not leave the queue; the entry goes when its heartbeat lapses",
			"name", fm.name, "error", err)
	}
	fm.wake(head)
}

// newLease describes the lease of term t, a new hold by field, for the
// scheduler. The lock hash has Mutex's shape, so Mutex's renewal serves it.
func (fm *FairMutex) newLease(t *term) *lease.Lease {
	l := &t.own
	t.args[0], t.args[1] = t.field, fm.leaseMS
	*l = lease.Lease{
		Key:  fm.key,
		Keys: []string{fm.key},
		Args: t.args[:2],
		TTL:  fm.cfg.leaseTTL(),
		Lost: t,
	}
	if fm.cfg.lease == 0 {
		l.Renew = scripts.MutexRenew
	}
	return l
}

// unlock releases one hold of owner (see Client.releaseHold, whose steps
// these are).
func (fm *FairMutex) unlock(ctx context.Context, owner uint64) error {
	c := fm.c
	h := c.ref(holdKey{kind: fair, name: fm.key, owner: owner}, false)
	if h == nil {
		return lockError(fm.name, ErrNotHeld)
	}
	defer c.unref(h)
	if err := h.op.lock(ctx); err != nil {
		return err
	}
	defer h.op.unlock()
	if h.count == 0 {
		return lockError(fm.name, ErrNotHeld)
	}
	t := h.term.Load()
	if ended, err := t.result(); ended {
		// Lost or closed earlier: the owner's release acknowledges it.
		if h.count--; h.count == 0 {
			c.finish(h)
		}
		return err
	}
	if h.count > 1 {
		h.count--
		reentryDone := func(status int64, _ string, err error) {
			if err == nil && status < 0 {
				c.leases.Remove(t.lease)
				c.lost(t, fm.name, &fm.cfg, errHoldGone)
			}
		}
		status, _, err, finished := fm.settle(ctx, release{field: h.field, from: h.count + 1, to: h.count}, reentryDone)
		if finished {
			reentryDone(status, "", err)
			if ended, lost := t.result(); ended {
				err = lost
			}
		}
		return err
	}
	if !c.leases.Remove(t.lease) {
		// The scheduler has just found it lost; its report is on the way.
		// The release below still frees what may be left of it in Redis.
		c.lost(t, fm.name, &fm.cfg, lease.ErrExpired)
	}
	r := release{field: h.field, from: 1, to: 0, latch: latchTTL}
	if h.ambiguous {
		r.latch = tombstoneTTL
	}
	finalDone := func(status int64, head string, err error) {
		switch {
		case err != nil:
			t.end(err)
		case status < 0:
			c.lost(t, fm.name, &fm.cfg, errHoldGone)
		default:
			t.end(nil)
		}
		fm.wake(head)
	}
	status, head, err, finished := fm.settle(ctx, r, finalDone)
	c.finish(h)
	if !finished {
		return err
	}
	finalDone(status, head, err)
	_, err = t.result()
	return err
}

// wake wakes the waiter with id head in this process at once, without the
// Pub/Sub round trip (the script's message reaches other processes).
func (fm *FairMutex) wake(head string) {
	if head != "" {
		fm.c.notify.WakeTag(fm.channel, head)
	}
}

// settle runs release r as Client.settle does: it waits for Redis as long
// as ctx lasts, then finishes the release in the background and calls done
// from there.
func (fm *FairMutex) settle(ctx context.Context, r release, done func(int64, string, error)) (int64, string, error, bool) {
	if ctx.Err() == nil {
		rctx, cancel := context.WithTimeout(ctx, releaseBudget)
		status, head, err := fm.release(rctx, r, "")
		cancel()
		if err == nil || ctx.Err() == nil {
			return status, head, err, true
		}
	}
	fm.c.background.Go(func() {
		rctx, cancel := context.WithTimeout(context.Background(), releaseBudget)
		defer cancel()
		status, head, err := fm.release(rctx, r, "")
		if err != nil {
			fm.cfg.logger.Warn("redisync: unlock failed; the lock expires with its lease", "name", fm.name, "error", err)
		}
		done(status, head, err)
	})
	return 0, "", ctx.Err(), false
}

// release runs the release script once: the hold r.field goes from r.from to
// r.to holds (0 releases the lock), and waiter id, if not empty, leaves the
// queue. A lost reply may be repeated (the script is idempotent). It returns
// 1 when the lock was released, 0 when still held and -1 when the hold was
// not there, and the id of the waiter it woke.
func (fm *FairMutex) release(ctx context.Context, r release, id string) (int64, string, error) {
	reply, err := fm.c.scripts.Exec(ctx, scripts.Call{
		Script:    scripts.FairRelease,
		Keys:      []string{fm.key, fm.queue, fm.alive, fm.channel, fm.latch},
		Args:      append(r.argv(new([6]string), fm.c.publish), id),
		Retryable: true, // idempotent: the count is compare-and-set, the final release latched
	}).ToArray()
	if err == nil && len(reply) != 2 {
		err = fmt.Errorf("fair_release replied %d values", len(reply))
	}
	if err != nil {
		return 0, "", lockError(fm.name, err)
	}
	status, err := reply[0].AsInt64()
	if err != nil {
		return 0, "", lockError(fm.name, err)
	}
	head, _ := reply[1].ToString()
	return status, head, nil
}

// waitMS converts a wait bound in milliseconds from a script, capped at an
// hour so that a far deadline (written outside redisync) cannot overflow.
func waitMS(ms int64) time.Duration {
	return time.Duration(min(ms, int64(time.Hour/time.Millisecond))) * time.Millisecond
}
