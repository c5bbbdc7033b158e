package redisync

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/scripts"
)

// fairAcquirer makes the acquire attempts of one owner on a FairMutex. With
// reentrant set, an owner that holds the lock takes it again without queueing.
type fairAcquirer struct {
	fm        *FairMutex
	owner     uint64
	reentrant bool
}

func (a fairAcquirer) primitive() string { return PrimitiveFairMutex }

func (a fairAcquirer) holdKey() holdKey {
	return holdKey{kind: fair, name: a.fm.key, owner: a.owner}
}

// try makes one attempt; with a nil ticket it does not queue (TryLock).
func (a fairAcquirer) try(ctx context.Context, tk *ticket) (attempt, error) {
	fm, c := a.fm, a.fm.c
	h := c.ref(a.holdKey(), true)
	defer c.unref(h)
	h.op.Lock()
	defer h.op.Unlock()
	mode := "own"
	var free <-chan struct{}
	if h.count > 0 {
		switch {
		case a.reentrant:
			if ended, err := h.term.Load().result(); ended {
				return attempt{}, err
			}
		case tk == nil:
			return attempt{}, nil // held by this very owner: TryLock fails
		default:
			// Another call of this owner holds the lock (a second Lock on a
			// handle). Queue now, so that the turn is fixed by arrival, but
			// never take until that hold is released here.
			mode, free = "queue", h.freeChan()
		}
	}
	count := 1
	if a.reentrant && h.count > 0 {
		count = h.count + 1
	}
	id := ""
	if tk != nil {
		id = tk.id
	}
	hbMS := "0"
	if tk != nil {
		hbMS = tk.hbMS()
	}
	field := c.field(a.owner)
	sent := time.Now()
	reply, err := c.scripts.Exec(ctx, scripts.Call{
		Script: scripts.FairAcquire,
		Keys:   []string{fm.key, fm.queue, fm.alive, fm.channel},
		Args:   []string{fm.leaseMS, field, strconv.Itoa(count), id, hbMS, c.publish, mode},
	}).AsIntSlice()
	if err == nil && len(reply) != 2 {
		err = fmt.Errorf("fair_acquire replied %d values", len(reply))
	}
	if err != nil {
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
	default:
		if tk != nil {
			tk.queued(sent)
		}
		return attempt{wait: waitMS(reply[1]), free: free}, nil
	}
	var t *term
	reentered := h.count > 0
	if !reentered {
		t = newObservedTerm(c, &fm.cfg, PrimitiveFairMutex, fm.name)
		t.lease = fm.newLease(t, field)
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
	return attempt{acquired: true, reentered: reentered}, nil
}

// leave takes the ticket (if any) out of the queue and sets the owner's hold
// count back to what this process knows, releasing the lock if an attempt of
// unknown outcome took it. Both are idempotent, and the script passes the
// turn on when the leaving waiter was the head of a free lock.
func (a fairAcquirer) leave(ctx context.Context, tk *ticket) {
	fm, c := a.fm, a.fm.c
	h := c.ref(a.holdKey(), true)
	defer c.unref(h)
	h.op.Lock()
	defer h.op.Unlock()
	id := ""
	if tk != nil {
		id = tk.id
	}
	_, head, err := fm.release(context.WithoutCancel(ctx), c.field(a.owner), h.count, id, cleanupBudget)
	if err != nil {
		fm.cfg.logger.Warn("redisync: could not leave the queue; the entry goes when its heartbeat lapses",
			"name", fm.name, "error", err)
	}
	fm.wake(head)
}

// newLease describes the lease of term t, a new hold by field, for the
// scheduler. The lock hash has Mutex's shape, so Mutex's renewal serves it.
func (fm *FairMutex) newLease(t *term, field string) *lease.Lease {
	l := &t.own
	*l = lease.Lease{
		Key:  fm.key,
		Keys: []string{fm.key},
		Args: []string{field, fm.leaseMS},
		TTL:  fm.cfg.leaseTTL(),
		Lost: t,
	}
	if fm.cfg.lease == 0 {
		l.Renew = scripts.MutexRenew
	}
	return l
}

// unlock releases one hold of owner.
func (fm *FairMutex) unlock(ctx context.Context, owner uint64) error {
	c := fm.c
	h := c.ref(holdKey{kind: fair, name: fm.key, owner: owner}, false)
	if h == nil {
		return lockError(fm.name, ErrNotHeld)
	}
	defer c.unref(h)
	h.op.Lock()
	defer h.op.Unlock()
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
	field := c.field(owner)
	if h.count > 1 {
		h.count--
		status, _, err := fm.release(ctx, field, h.count, "", releaseBudget)
		if err == nil && status < 0 {
			c.leases.Remove(t.lease)
			c.lost(t, fm.name, &fm.cfg, errHoldGone)
			_, err = t.result()
		}
		return err
	}
	if !c.leases.Remove(t.lease) {
		// The scheduler has just found it lost; its report is on the way.
		c.lost(t, fm.name, &fm.cfg, lease.ErrExpired)
	} else if status, head, err := fm.release(ctx, field, 0, "", releaseBudget); err != nil {
		t.end(err)
	} else {
		if status < 0 {
			c.lost(t, fm.name, &fm.cfg, errHoldGone)
		} else {
			t.end(nil)
		}
		fm.wake(head)
	}
	_, err := t.result()
	c.finish(h)
	return err
}

// wake wakes the waiter with id head in this process at once, without the
// Pub/Sub round trip (the script's message reaches other processes).
func (fm *FairMutex) wake(head string) {
	if head != "" {
		fm.c.notify.WakeTag(fm.channel, head)
	}
}

// release sets field's hold count to count (0 releases the lock) and takes
// waiter id, if not empty, out of the queue, retrying a lost reply with the
// same request id for up to budget. It returns 1 when the lock was released,
// 0 when still held and -1 when field did not hold it, and the id of the
// waiter it woke.
func (fm *FairMutex) release(ctx context.Context, field string, count int, id string, budget time.Duration) (int64, string, error) {
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	latch := fm.latch + ":" + strconv.FormatUint(rand.Uint64(), 16)
	reply, err := fm.c.scripts.Exec(ctx, scripts.Call{
		Script:    scripts.FairRelease,
		Keys:      []string{fm.key, fm.queue, fm.alive, fm.channel, latch},
		Args:      []string{field, strconv.Itoa(count), fm.c.publish, latchTTL, id},
		Retryable: true, // idempotent: the count is set, the final release latched
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
