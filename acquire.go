package redisync

import (
	"context"
	"fmt"
	"time"

	"github.com/go-redisync/redisync/internal/scripts"
)

// How an owner that already holds treats another acquire.
type holdMode uint8

const (
	waitFree    holdMode = iota // wait until the hold is released (sync.Mutex)
	waitHandoff                 // the same, in a waiting call: queue for a handover
	reenter                     // add a hold (an explicit owner)
	share                       // add a hold, but wait while a lost hold is unreleased
)

// A caller is one acquiring call of one owner: its protocol and mode, and
// what it keeps across its attempts.
type caller struct {
	p      *protocol
	mode   holdMode
	n      int  // holds (permits) to add
	single bool // a Try call: one attempt that waits for nothing
	call   holdCall
	place  *place // the call's place in its Client's queue of the lock, while it waits
	value  int64  // what the acquire script passed on at the last success (a fencing token)
	term   *term  // the term of the last success
	// complete records that what the call waits for has happened with
	// nothing to hold: a Once's function succeeded, a WaitGroup reached zero.
	complete bool
	check    func() error              // if set, runs before each attempt (an upgrade is refused)
	left     func(ctx context.Context) // if set, runs when a waiting call gives up (a writer's claim)
}

// A holdCall is one acquiring call's part in hold identity, across its
// attempts.
type holdCall struct {
	// field is the identity the call's first acquire asks for, kept by its
	// retries: a retry adopts what an earlier attempt of the call took, and
	// no other acquire does. firstUnknown records an attempt of unknown outcome.
	field        string
	firstUnknown bool
	// reentered is the field of the hold the latest re-entry attempt was
	// for, base the count it expected, reentryUnknown that its outcome is
	// unknown.
	reentered      string
	base           int
	reentryUnknown bool
	sent           bool // an attempt reached Redis: a call that gives up may have something to take back
}

// uncertain reports whether an attempt of the call may have taken something
// that the call did not get to record: what its undo gives back.
func (call *holdCall) uncertain() bool { return call.firstUnknown || call.reentryUnknown }

// try makes one attempt of a, queueing with tk when not nil.
func (c *Client) try(ctx context.Context, a *caller, tk *ticket) (attempt, error) {
	if a.check != nil {
		if err := a.check(); err != nil {
			return attempt{}, err
		}
	}
	res, t, value, err := c.tryHold(ctx, a, tk)
	a.complete = res.complete
	if t != nil {
		a.value, a.term = value, t
		t.token.Store(uint64(value))
		a.p.cur.Store(t) // the handle's Done and Err
	}
	return res, err
}

// tryHold makes one acquire attempt of a. On success it returns the term and
// the value the acquire script passed on. A single attempt does not wait for
// another call of the owner; the others wait for one only as long as ctx
// lasts.
func (c *Client) tryHold(ctx context.Context, a *caller, tk *ticket) (attempt, *term, int64, error) {
	p := a.p
	h := c.ref(p.key, true)
	defer c.unref(h)
	if !c.lockOp(ctx, h, a) {
		return attempt{}, nil, 0, ctx.Err()
	}
	defer h.op.Unlock()
	acq := acquisition{h: h, n: a.n, tk: tk}
	var free <-chan struct{}
	if h.count > 0 {
		res, stop, err := c.owned(h, a, tk, &acq)
		if stop {
			return res, nil, 0, err
		}
		free = res.free
	}
	if acq.count == 0 {
		if c.queuedBehind(a, tk) {
			return attempt{wait: -1}, nil, 0, nil // a Busy reply without asking: a local waiter is ahead
		}
		acq.field = c.callField(a)
	}
	sent := time.Now()
	a.call.sent = true
	actx, sync := syncFor(ctx, p, &acq)
	r, err := p.acquire(actx, acq)
	switch {
	case err != nil:
		if ambiguous(err) {
			a.call.firstUnknown = a.call.firstUnknown || acq.count == 0
			a.call.reentryUnknown = acq.count > 0
		}
		return attempt{}, nil, 0, lockError(p.name, err)
	case r.Outcome == scripts.Gone:
		t := h.term.Load()
		c.lose(t, ErrHoldGone)
		_, err := t.result()
		return attempt{}, nil, 0, err
	case r.Outcome == scripts.Refused:
		return attempt{}, nil, 0, lockError(p.name, errRefused)
	case r.Outcome == scripts.Complete:
		return attempt{complete: true}, nil, 0, nil
	case r.Outcome == scripts.Busy:
		if tk != nil {
			tk.Queued(sent)
		}
		return attempt{wait: waitMS(r.Value), free: free, channel: r.Channel, place: r.Place,
			mayQueue: tk == nil && p.waitQueue && a.takesHanded()}, nil, 0, nil
	case sync != nil && sync.Acked < sync.Wanted:
		return attempt{}, nil, 0, c.unreplicated(ctx, a, &acq, sync)
	case sync != nil:
		acq.synced = sync.N
	}
	return c.took(h, a, &acq, sent), h.term.Load(), r.Value, nil
}

// callField returns the identity the first acquire of call a asks for: a
// new one on its first attempt, the same on its retries.
func (c *Client) callField(a *caller) string {
	if a.call.field == "" {
		a.call.field = c.newField(a.p.key.owner, a.p.suffix)
	}
	return a.call.field
}

// lockOp takes h's op for a: at once or not at all for a single attempt,
// else waiting as long as ctx lasts.
func (c *Client) lockOp(ctx context.Context, h *hold, a *caller) bool {
	if a.single {
		return h.op.TryLock()
	}
	return h.op.Lock(ctx) == nil
}

// owned decides an attempt of a while its owner holds (h.count > 0): it
// fills acq for a re-entry, or returns the attempt's result with stop set.
func (c *Client) owned(h *hold, a *caller, tk *ticket, acq *acquisition) (res attempt, stop bool, err error) {
	p := a.p
	ended, err := h.term.Load().result()
	switch {
	case ended && p.permits:
		c.setAside(h) // a new term; the lost permits wait for Release
		return attempt{}, false, nil
	case a.mode == waitFree && p.queued && tk != nil && !ended:
		// A second Lock of the owner queues now, so that its turn is fixed
		// by arrival, but never takes until the owner's hold is released.
		acq.queueOnly = true
		return attempt{free: h.freeChan()}, false, nil
	case a.mode == waitFree, a.mode == waitHandoff, a.mode == share && ended:
		return attempt{free: h.freeChan()}, true, nil
	case ended:
		return attempt{}, true, err
	}
	acq.field, acq.count = h.term.Load().field, h.count
	a.call.reentered, a.call.base, a.call.reentryUnknown = acq.field, h.count, false
	return attempt{}, false, nil
}

// took records an acquisition of a (h.op held): a first one begins a term,
// a re-entry adds to it.
func (c *Client) took(h *hold, a *caller, acq *acquisition, sent time.Time) attempt {
	p := a.p
	if acq.count == 0 {
		t := newObservedTerm(p.cfg, p.primitive, p.name)
		t.field, t.ambiguous, t.synced = acq.field, a.call.firstUnknown, acq.synced
		h.setCount(a.n)
		t.lease = p.newLease(t)
		c.begin(h, t, sent, acq.within)
	} else {
		h.setCount(h.count + a.n)
		c.leases.Touch(h.term.Load().lease, sent)
	}
	if c.isClosed() {
		// Close may have ended holds before this one was recorded.
		h.term.Load().end(lockError(p.name, ErrClosed))
	}
	return attempt{acquired: true, reentered: acq.count > 0}
}

// giveUp takes back what the failed call a left in Redis: a queued call's
// ticket leaves the queue; what an attempt of unknown outcome may have taken
// is given back (the hold its first acquire asked for is released, and its
// latch left long enough to refuse a copy still on its way; a re-entry's
// count is set back). A Mutex call queued in Redis gives back its field,
// which a release may have handed the lock to: a call that failed, and one
// whose hold came another way (a handover within the Client).
func (c *Client) giveUp(ctx context.Context, a *caller, tk *ticket) {
	p := a.p
	r := release{Release: scripts.Release{Field: a.call.field, From: a.n, To: 0, Latch: tombstoneTTL, Undo: true}}
	switch {
	case !a.call.sent, p.waitOnly:
		return // nothing reached Redis, or nothing can be held
	case a.call.firstUnknown, tk != nil && p.waitQueue:
		// The field is this call's alone: no need to wait for op. A queued
		// Mutex call may have been handed the lock under it.
	case a.call.reentryUnknown:
		h := c.ref(p.key, true)
		defer c.unref(h)
		_ = h.op.Lock(context.Background())
		defer h.op.Unlock()
		if t := h.term.Load(); h.count == 0 || t.field != a.call.reentered {
			r = release{} // the hold it re-entered has ended
		} else {
			r = release{h: h, Release: scripts.Release{Field: t.field, From: a.call.base + a.n, To: a.call.base}}
		}
	case tk == nil:
		return
	default:
		r = release{} // only the queue entry
	}
	if tk != nil {
		r.Waiter = tk.ID
	}
	if r.Field == "" && r.Waiter == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupBudget)
	defer cancel()
	rep, err := p.release(ctx, r)
	if err != nil {
		p.cfg.logger.Warn("redisync: could not take back what a waiting call left; it expires with its lease or heartbeat",
			"name", p.name, "error", err)
		return
	}
	c.wake(p, rep.Woken, r.To == 0 && rep.Status == 1)
}

// syncFor returns the context for acquisition acq of p: with
// WithSyncReplicas, a first acquire's carries the request that replicas
// acknowledge it.
func syncFor(ctx context.Context, p *protocol, acq *acquisition) (context.Context, *scripts.Sync) {
	if p.cfg.syncReplicas == 0 || acq.count > 0 || p.waitOnly {
		return ctx, nil
	}
	s := &scripts.Sync{N: p.cfg.syncReplicas, Timeout: p.cfg.syncTimeout}
	return scripts.WithSync(ctx, s), s
}

// unreplicated undoes acquisition acq of a (h.op held), which fewer replicas
// acknowledged in time than asked, and returns the error that says so. The
// call's next attempt takes a new identity: this one's is latched.
func (c *Client) unreplicated(ctx context.Context, a *caller, acq *acquisition, s *scripts.Sync) error {
	p := a.p
	r := release{Release: scripts.Release{Field: acq.field, From: a.n, Latch: latchTTL, Undo: true}}
	if a.call.firstUnknown {
		r.Latch = tombstoneTTL
	}
	a.call.field, a.call.firstUnknown = "", false
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupBudget)
	defer cancel()
	if rep, err := p.release(rctx, r); err != nil {
		p.cfg.logger.Warn("redisync: could not undo an acquisition that was not replicated; it expires with its lease",
			"name", p.name, "error", err)
	} else {
		c.wake(p, rep.Woken, rep.Status == 1)
	}
	return lockError(p.name, fmt.Errorf("%w: %d of %d acknowledged within %v", ErrNotReplicated, s.Acked, s.Wanted, s.Timeout))
}
