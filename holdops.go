package redisync

import (
	"context"
	"errors"
	"time"

	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/mutant"
)

// Unlock retries and latches. A release whose reply is lost is sent again with
// the same request id for up to releaseBudget; its latch outlives that window
// so the retry still finds it.
const (
	releaseBudget = 3 * time.Second
	latchTTL      = "5000" // milliseconds
	cleanupBudget = 2 * time.Second
)

// errHoldGone is the cause of a loss found by an acquire or a release.
var errHoldGone = errors.New("the hold was gone from Redis")

// Outcomes of an acquire script.
const (
	acquired = iota
	busy     // value is how long to wait, in milliseconds
	gone     // a re-entry found the owner's hold lost
)

// A holdOp is one sort of hold on one lock, for one owner: the scripts that
// take and leave it, and its lease. The primitives describe their holds this
// way and share the bookkeeping below.
type holdOp struct {
	key holdKey
	cfg *config
	// primitive names the lock's sort in events (Event.Primitive).
	primitive string
	// channel is where waiters of the lock wait; wakeAll wakes all of this
	// process's waiters on a release instead of one.
	channel string
	wakeAll bool
	// acquire runs the script that gives the owner count holds. It returns
	// the outcome and, for acquired, a value to pass on (a fencing token).
	acquire func(ctx context.Context, count int) (outcome int, value int64, err error)
	// release runs the script that leaves the owner count holds, retrying a
	// lost reply for up to budget. It returns 1 when the owner's last hold is
	// gone, 0 when it still holds, -1 when it held nothing.
	release func(ctx context.Context, count int, budget time.Duration) (int64, error)
	// newLease describes the lease of a new term.
	newLease func(t *term) *lease.Lease
	// handoff lets a release hand the hold straight to a local caller of the
	// same owner that waits for it (see maxHandoffs). Never for a hold whose
	// every acquisition must be seen by Redis (a FencedMutex's token).
	handoff bool
}

// maxHandoffs and maxHandoffTime bound the handovers in a row between local
// callers of one owner: a Lock that waits for its own handle's hold gets it
// from the Unlock without a round trip to Redis, but after maxHandoffs such
// handovers, or once maxHandoffTime has passed since the hold came from Redis
// (its acquire's reply), the hold is released in Redis, so that other
// processes get their chance.
//
// The count alone would let long critical sections keep the lock in one
// process for 64 of them; the time bound, sync.Mutex's starvation threshold,
// caps that. With short ones the count ends the run first: 64 handovers take
// a few hundred microseconds, and each run saves a release and an acquire in
// Redis (with 16, goroutines sharing a handle made a third as many locks per
// second).
const maxHandoffs = 64

// maxHandoffTime is a variable only so that tests can lengthen it.
var maxHandoffTime = time.Millisecond

// A handoffWait is a caller's place in its owner's handover queue.
type handoffWait struct {
	h  *hold
	op *holdOp
	ch chan struct{} // receives when the hold is handed to the caller
}

// How an owner that already holds treats another acquire.
type holdMode uint8

const (
	waitFree    holdMode = iota // wait until the hold is released (sync.Mutex)
	waitHandoff                 // the same, in a waiting call: queue for a handover
	reenter                     // add a hold (an explicit owner)
	share                       // add a hold, but wait while a lost hold is unreleased
)

// tryHold makes one acquire attempt of op. On success it returns the term and
// the value the acquire script passed on.
func (c *Client) tryHold(ctx context.Context, op *holdOp, mode holdMode) (attempt, *term, int64, error) {
	name := op.key.name
	h := c.ref(op.key, true)
	defer c.unref(h)
	arriving := mode == waitHandoff && op.handoff
	if arriving {
		h.arriving.Add(1) // a release meanwhile may park the hold for us
	}
	h.op.Lock()
	if arriving {
		h.arriving.Add(-1)
	}
	defer h.op.Unlock()
	if h.parked {
		if t, ok := c.unpark(h); ok {
			return attempt{acquired: true, localHandoff: true}, t, 0, nil
		}
	}
	if h.count > 0 {
		ended, err := h.term.Load().result()
		switch {
		case mode == waitHandoff && op.handoff && !ended:
			ch := make(chan struct{}, 1)
			h.handoff = append(h.handoff, ch)
			return attempt{free: h.freeChan(), handoff: &handoffWait{h: h, op: op, ch: ch}}, nil, 0, nil
		case mode == waitFree, mode == waitHandoff, mode == share && ended:
			return attempt{free: h.freeChan()}, nil, 0, nil
		case ended:
			return attempt{}, nil, 0, err
		}
	}
	sent := time.Now()
	outcome, value, err := op.acquire(ctx, h.count+1)
	switch {
	case err != nil:
		return attempt{}, nil, 0, lockError(name, err)
	case outcome == gone:
		t := h.term.Load()
		c.leases.Remove(t.lease)
		c.lost(t, name, op.cfg, errHoldGone)
		_, err := t.result()
		return attempt{}, nil, 0, err
	case outcome == busy:
		return attempt{wait: time.Duration(value) * time.Millisecond}, nil, 0, nil
	}
	var t *term
	reentered := h.count > 0
	if !reentered {
		t = newObservedTerm(c, op.cfg, op.primitive, name)
		t.lease = op.newLease(t)
		c.begin(h, t, sent)
	} else {
		t = h.term.Load()
		h.count++
		c.leases.Touch(t.lease, sent)
	}
	if c.isClosed() {
		// Close may have ended holds before this one was recorded.
		t.end(lockError(name, ErrClosed))
	}
	return attempt{acquired: true, reentered: reentered}, t, value, nil
}

// undoHold sets the owner's hold count back to what it was before an attempt
// whose outcome is unknown, releasing the lock if that attempt took it.
func (c *Client) undoHold(ctx context.Context, op *holdOp) {
	h := c.ref(op.key, true)
	defer c.unref(h)
	h.op.Lock()
	defer h.op.Unlock()
	if _, err := op.release(context.WithoutCancel(ctx), h.count, cleanupBudget); err != nil {
		op.cfg.logger.Warn("redisync: could not undo an acquire of unknown outcome; a hold it took expires with its lease",
			"name", op.key.name, "error", err)
	}
}

// releaseHold leaves one hold of op's owner. It returns an error wrapping
// ErrNotHeld when the owner holds nothing here.
func (c *Client) releaseHold(ctx context.Context, op *holdOp) error {
	name := op.key.name
	h := c.ref(op.key, false)
	if h == nil {
		return lockError(name, ErrNotHeld)
	}
	defer c.unref(h)
	h.op.Lock()
	defer h.op.Unlock()
	if h.count == 0 || h.parked {
		return lockError(name, ErrNotHeld)
	}
	t := h.term.Load()
	if ended, err := t.result(); ended && !mutant.On("unlock-any") {
		// Lost or closed earlier: the owner's release acknowledges it.
		if h.count--; h.count == 0 {
			c.finish(h)
		}
		return err
	}
	// Not once the lease's deadline has passed either (the process was
	// paused): the hold may be gone from Redis, and the release below finds out.
	if h.count == 1 && op.handoff && h.streak < maxHandoffs && time.Since(h.fromRedis) < maxHandoffTime &&
		c.leases.Current(t.lease) {
		switch {
		case len(h.handoff) > 0:
			// A local caller of the owner waits for this very hold: hand it over.
			ch := h.handoff[0]
			h.handoff = h.handoff[1:]
			h.streak++
			if t.obs != nil {
				t.observeHandoff()
			}
			ch <- struct{}{} // buffered: never blocks
			return nil
		case h.arriving.Load() > 0:
			// One is on its way to the queue, blocked on h.op: releasing
			// in Redis now would make it (and all the others) acquire
			// there again. Leave the hold for it to take.
			h.parked = true
			h.streak++
			if t.obs != nil {
				t.observeHandoff()
			}
			return nil
		}
	}
	if h.count > 1 {
		h.count--
		released, err := op.release(ctx, h.count, releaseBudget)
		if err == nil && released < 0 {
			c.leases.Remove(t.lease)
			c.lost(t, name, op.cfg, errHoldGone)
			_, err = t.result()
		}
		return err
	}
	if !c.leases.Remove(t.lease) && !mutant.On("unlock-any") {
		// The scheduler has just found it lost; its report is on the way.
		c.lost(t, name, op.cfg, lease.ErrExpired)
	} else if released, err := op.release(ctx, 0, releaseBudget); err != nil {
		t.end(err)
	} else if released < 0 {
		c.lost(t, name, op.cfg, errHoldGone)
	} else {
		t.end(nil)
	}
	_, err := t.result()
	c.finish(h)
	if op.wakeAll {
		c.notify.WakeAll(op.channel)
	} else {
		c.notify.WakeOne(op.channel)
	}
	return err
}

// unpark takes the parked hold of h (h.op held) for the caller and returns
// its term. When the hold ended meanwhile (lost, Close, ForceUnlock), nobody
// holds it to acknowledge that with a release: unpark does, clears h and
// reports false, and the caller acquires in Redis.
func (c *Client) unpark(h *hold) (*term, bool) {
	h.parked = false
	t := h.term.Load()
	if ended, _ := t.result(); ended {
		c.finish(h)
		return nil, false
	}
	return t, true
}

// abandonHandoff takes a caller that gives up out of its owner's handover
// queue. If the hold was handed to it meanwhile, it releases it: it passes to
// the next local caller, or back to Redis.
func (c *Client) abandonHandoff(ctx context.Context, hw *handoffWait) {
	hw.h.op.Lock()
	for i, ch := range hw.h.handoff {
		if ch == hw.ch {
			hw.h.handoff = append(hw.h.handoff[:i:i], hw.h.handoff[i+1:]...)
			hw.h.op.Unlock()
			return
		}
	}
	hw.h.op.Unlock()
	select {
	case <-hw.ch:
		if err := c.releaseHold(context.WithoutCancel(ctx), hw.op); err != nil {
			hw.op.cfg.logger.Warn("redisync: a hold handed to a caller that gave up could not be released; it expires with its lease",
				"name", hw.op.key.name, "error", err)
		}
	default:
	}
}
