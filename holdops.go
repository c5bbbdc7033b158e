package redisync

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/mutant"
)

// Release retries and latches. A release whose reply is lost is sent again
// for up to releaseBudget; the final release of a hold leaves a latch named by
// the hold's identity, which outlives that window so that the repeat still
// finds it and answers as the first attempt did.
//
// A hold one of whose acquire attempts had an unknown outcome, and the undo of
// a call that gave up after one, leave the latch for tombstoneTTL instead: a
// copy of that attempt may still be on its way (rueidis writes a command whose
// caller gave up, and a stalled connection delivers it late), and the latch
// makes it take nothing. A copy later than that can take a lock for nobody,
// which then expires with its lease.
const (
	releaseBudget = 3 * time.Second
	latchTTL      = "5000"  // milliseconds
	tombstoneTTL  = "60000" // milliseconds
	cleanupBudget = 2 * time.Second
)

// errHoldGone is the cause of a loss found by an acquire or a release.
var errHoldGone = errors.New("the hold was gone from Redis")

// errRefused is returned by an acquire that found its own call's latch: only
// a late copy of an attempt should ever see that.
var errRefused = errors.New("the acquire was refused: its call had been undone")

// Outcomes of an acquire script.
const (
	acquired = iota
	busy     // value is how long to wait, in milliseconds
	gone     // a re-entry found the hold lost
	refused  // a first acquire found its call's latch (see errRefused)
)

// lastHold numbers the holds of the process: a hold's identity in Redis is
// "<client-uuid>:<n>", as Redisson's field is "<uuid>:<thread-id>".
var lastHold atomic.Uint64

// newField returns the identity of a new hold of owner, ending in suffix: a
// field no other hold has had. (The owner-field mutant gives every hold of an owner the
// same one, as redisync once did.)
func (c *Client) newField(owner uint64, suffix string) string {
	if mutant.On("owner-field") {
		return c.field(owner) + suffix
	}
	var buf [64]byte
	b := append(buf[:0], c.id...)
	b = append(b, ':')
	b = strconv.AppendUint(b, lastHold.Add(1), 10)
	return string(append(b, suffix...))
}

// A holdCall is one acquiring call's part in hold identity, across its
// attempts.
type holdCall struct {
	// field is the identity a first acquire of the call asks for, made on
	// its first attempt and kept by its retries: a retry adopts what an
	// earlier attempt of the same call took, and no other acquire does.
	field string
	// firstUnknown records a first-acquire attempt of unknown outcome.
	firstUnknown bool
	// reentered is the field of the hold the call's latest re-entry attempt
	// was for, base the count it expected, and reentryUnknown whether its
	// outcome is unknown.
	reentered      string
	base           int
	reentryUnknown bool
	// sent records that an attempt reached the script call: before that,
	// a call that gives up has nothing in Redis to take back.
	sent bool
}

// uncertain reports whether an attempt of the call may have taken something
// that the call did not get to record: what its undo gives back.
func (call *holdCall) uncertain() bool { return call.firstUnknown || call.reentryUnknown }

// A release describes one call of a release script: the hold field goes
// from from holds to to (0 releases it). latch is how long, in milliseconds,
// the final release's latch lasts; undo makes the script leave the latch even
// when the hold is not there.
type release struct {
	field    string
	from, to int
	latch    string
	undo     bool
}

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
	// acquire runs the script that takes the hold field from count holds to
	// count+1 (count 0: a first acquire). It returns the outcome and, for
	// acquired, a value to pass on (a fencing token).
	acquire func(ctx context.Context, field string, count int) (outcome int, value int64, err error)
	// release runs a release script once. It returns 1 when the hold is gone
	// by this release (or a repeat of it), 0 when it is still held, -1 when
	// it was not there.
	release func(ctx context.Context, r release) (int64, error)
	// newLease describes the lease of a new term (t.field is set).
	newLease func(t *term) *lease.Lease
	// suffix ends the fields of new holds (a write hold's ":write").
	suffix string
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

// tryHold makes one acquire attempt of op for call. On success it returns
// the term and the value the acquire script passed on. A single attempt (a
// TryLock: mode waitFree without waiting) does not wait for another call of
// the owner; the others wait for one only as long as ctx lasts.
func (c *Client) tryHold(ctx context.Context, op *holdOp, mode holdMode, call *holdCall, single bool) (attempt, *term, int64, error) {
	name := op.key.name
	h := c.ref(op.key, true)
	defer c.unref(h)
	if single {
		if !h.op.tryLock() {
			return attempt{}, nil, 0, nil // the owner is busy with the lock: not acquired
		}
	} else {
		arriving := mode == waitHandoff && op.handoff
		if arriving {
			h.arriving.Add(1) // a release meanwhile may park the hold for us
		}
		err := h.op.lock(ctx)
		if arriving {
			h.arriving.Add(-1)
		}
		if err != nil {
			return attempt{}, nil, 0, err
		}
	}
	defer h.op.unlock()
	if h.parked {
		if t, ok := c.unpark(h); ok {
			return attempt{acquired: true, localHandoff: true}, t, 0, nil
		}
	}
	field, count := h.field, h.count
	if count > 0 {
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
		call.reentered, call.base, call.reentryUnknown = field, count, false
	} else {
		if call.field == "" {
			call.field = c.newField(op.key.owner, op.suffix)
		}
		field = call.field
	}
	sent := time.Now()
	outcome, value, err := op.acquire(ctx, field, count)
	switch {
	case err != nil:
		if ambiguous(err) {
			if count > 0 {
				call.reentryUnknown = true
			} else {
				call.firstUnknown = true
			}
		}
		return attempt{}, nil, 0, lockError(name, err)
	case outcome == gone:
		t := h.term.Load()
		c.leases.Remove(t.lease)
		c.lost(t, name, op.cfg, errHoldGone)
		_, err := t.result()
		return attempt{}, nil, 0, err
	case outcome == refused:
		return attempt{}, nil, 0, lockError(name, errRefused)
	case outcome == busy:
		return attempt{wait: time.Duration(value) * time.Millisecond}, nil, 0, nil
	}
	var t *term
	if count == 0 {
		t = newObservedTerm(c, op.cfg, op.primitive, name)
		t.field = field
		t.lease = op.newLease(t)
		h.field, h.ambiguous = field, call.firstUnknown
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
	return attempt{acquired: true, reentered: count > 0}, t, value, nil
}

// undoHold gives back what an attempt of call whose outcome is unknown may
// have taken, once the call has given up: the hold its first acquire asked
// for is released, and its latch left for long enough to refuse a copy of
// the attempt still on its way; a re-entry's count is set back.
func (c *Client) undoHold(ctx context.Context, op *holdOp, call *holdCall) {
	var r release
	switch {
	case call.firstUnknown:
		// The field is this call's alone: no other call of the owner needs
		// to be waited for.
		r = release{field: call.field, from: 1, to: 0, latch: tombstoneTTL, undo: true}
	case call.reentryUnknown:
		h := c.ref(op.key, true)
		defer c.unref(h)
		_ = h.op.lock(context.Background())
		defer h.op.unlock()
		if h.count == 0 || h.field != call.reentered {
			return // the hold it re-entered has ended: nothing of it is left
		}
		r = release{field: h.field, from: call.base + 1, to: call.base}
	default:
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupBudget)
	defer cancel()
	status, err := op.release(ctx, r)
	switch {
	case err != nil:
		op.cfg.logger.Warn("redisync: could not undo an acquire of unknown outcome; a hold it took expires with its lease",
			"name", op.key.name, "error", err)
	case r.to == 0 && status == 1:
		c.wake(op) // the attempt had taken the lock
	}
}

// settle runs release r of op, repeating it after a lost reply, and returns
// its outcome; it gives up after releaseBudget. When ctx ends before Redis
// has answered (or had ended already), settle does not wait: it reports
// finished false, and the caller finishes the release with settleLater.
func (c *Client) settle(ctx context.Context, op *holdOp, r release) (status int64, err error, finished bool) {
	if ctx.Err() != nil {
		return 0, ctx.Err(), false
	}
	rctx, cancel := context.WithTimeout(ctx, releaseBudget)
	status, err = op.release(rctx, r)
	cancel()
	if err != nil && ctx.Err() != nil {
		return 0, ctx.Err(), false
	}
	if err != nil {
		err = lockError(op.key.name, err)
	}
	return status, err, true
}

// settleLater finishes a release whose caller's context ended first, in the
// background: it sends the release again, detached from that context (a
// repeat is harmless: a release acts on one hold's identity), and calls done
// with the outcome. Close waits for it.
func (c *Client) settleLater(op *holdOp, r release, done func(int64, error)) {
	c.background.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), releaseBudget)
		defer cancel()
		status, err := op.release(ctx, r)
		if err != nil {
			err = lockError(op.key.name, err)
			op.cfg.logger.Warn("redisync: unlock failed; the lock expires with its lease", "name", op.key.name, "error", err)
		}
		done(status, err)
	})
}

// wake wakes this process's waiters of op's lock after a release.
func (c *Client) wake(op *holdOp) {
	if op.wakeAll {
		c.notify.WakeAll(op.channel)
	} else {
		c.notify.WakeOne(op.channel)
	}
}

// releaseHold leaves one hold of op's owner. It returns an error wrapping
// ErrNotHeld when the owner holds nothing here, and ctx.Err() when ctx ends
// while another call of the owner keeps it waiting (the hold is then
// unchanged) or before Redis confirmed the release (which then goes on; see
// settle).
func (c *Client) releaseHold(ctx context.Context, op *holdOp) error {
	name := op.key.name
	h := c.ref(op.key, false)
	if h == nil {
		return lockError(name, ErrNotHeld)
	}
	defer c.unref(h)
	if err := h.op.lock(ctx); err != nil {
		return err
	}
	defer h.op.unlock()
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
	if c.handOver(h, op, t) {
		return nil
	}
	if h.count > 1 {
		h.count--
		r := release{field: h.field, from: h.count + 1, to: h.count}
		status, err, finished := c.settle(ctx, op, r)
		if !finished {
			c.settleLater(op, r, func(status int64, err error) { c.afterRelease(op, t, status, err, false) })
			return err
		}
		if lost := c.afterRelease(op, t, status, err, false); lost != nil {
			err = lost
		}
		return err
	}
	if !c.leases.Remove(t.lease) && !mutant.On("unlock-any") {
		// The scheduler has just found it lost; its report is on the way.
		// The release below still frees what may be left of it in Redis.
		c.lost(t, name, op.cfg, lease.ErrExpired)
	}
	r := release{field: h.field, from: 1, to: 0, latch: latchTTL}
	if h.ambiguous {
		r.latch = tombstoneTTL
	}
	status, err, finished := c.settle(ctx, op, r)
	c.finish(h)
	if !finished {
		c.settleLater(op, r, func(status int64, err error) { c.afterRelease(op, t, status, err, true) })
		return err
	}
	return c.afterRelease(op, t, status, err, true)
}

// afterRelease files the outcome of a release of term t: a hold found gone
// is lost; a final release ends the term (with err when Redis could not
// confirm it) and wakes the lock's local waiters. It returns the term's end,
// nil while it lasts.
func (c *Client) afterRelease(op *holdOp, t *term, status int64, err error, final bool) error {
	switch {
	case status < 0 && err == nil:
		c.leases.Remove(t.lease)
		c.lost(t, t.name, op.cfg, errHoldGone)
	case final:
		t.end(err)
	}
	if final {
		c.wake(op)
	}
	_, end := t.result()
	return end
}

// handOver passes h's hold (h.op held, one hold left, not ended) straight to
// a local caller of the same owner, or parks it for one on its way, instead
// of releasing it in Redis, when the bounds allow; it reports whether it did.
// Not once the lease's deadline has passed either (the process was paused):
// the hold may be gone from Redis, and the release finds out.
func (c *Client) handOver(h *hold, op *holdOp, t *term) bool {
	if h.count != 1 || !op.handoff || h.streak >= maxHandoffs || time.Since(h.fromRedis) >= maxHandoffTime ||
		!c.leases.Current(t.lease) {
		return false
	}
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
		return true
	case h.arriving.Load() > 0:
		// One is on its way to the queue, blocked on h.op: releasing in
		// Redis now would make it (and all the others) acquire there
		// again. Leave the hold for it to take.
		h.parked = true
		h.streak++
		if t.obs != nil {
			t.observeHandoff()
		}
		return true
	}
	return false
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
	_ = hw.h.op.lock(context.Background())
	for i, ch := range hw.h.handoff {
		if ch == hw.ch {
			hw.h.handoff = append(hw.h.handoff[:i:i], hw.h.handoff[i+1:]...)
			hw.h.op.unlock()
			return
		}
	}
	hw.h.op.unlock()
	select {
	case <-hw.ch:
		if err := c.releaseHold(context.WithoutCancel(ctx), hw.op); err != nil {
			hw.op.cfg.logger.Warn("redisync: a hold handed to a caller that gave up could not be released; it expires with its lease",
				"name", hw.op.key.name, "error", err)
		}
	default:
	}
}
