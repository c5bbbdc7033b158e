package redisync

import (
	"context"
	"fmt"
	"time"

	"github.com/go-redisync/redisync/internal/scripts"
)

// returnSlack is how long a call that returns may still wait for what it
// leaves to do in Redis (see cleanUp): a take-back that Redis answers at
// once, as it does when only the caller's context ended, is done before the
// call returns, and nothing the call left is seen after it; one that Redis
// does not answer goes on in the background, and the call returns by its
// deadline plus this slack.
const returnSlack = 20 * time.Millisecond

// cleanUp runs f, what a returning call on the lock called name leaves to
// do in Redis, in the background, and waits for it up to returnSlack (Close
// waits for the rest). f detaches what it sends from the call's context and
// bounds it itself; it must be safe to run late: it acts on identities of
// its own, latched against the late copies of the call's attempts. The
// Client's next attempts on name wait for it a while (see settled).
func (e *engine) cleanUp(name string, f func()) {
	if mutantTakebackSync {
		f() // the take-back done before the call returns, however long Redis takes
		return
	}
	done := make(chan struct{})
	finished := e.takeBacks.add(name)
	e.background.Go(func() {
		defer close(done)
		defer finished()
		f()
	})
	t := time.NewTimer(returnSlack)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// giveUp takes back what the failed call a left in Redis: a queued call's
// ticket leaves the queue; what an attempt of unknown outcome may have taken
// is given back (the hold its first acquire asked for is released, and its
// latch left long enough to refuse a copy still on its way; a re-entry's
// count is set back). A Mutex call queued in Redis gives back its field,
// which a release may have handed the lock to: a call that failed, and one
// whose hold came another way (a handover within the Client).
func (e *engine) giveUp(ctx context.Context, a *call) {
	p, tk := a.p, a.ticket()
	r := release{Release: scripts.Release{Field: a.field, From: a.n, To: 0, Latch: tombstoneTTL, Undo: true, Run: tk != nil}}
	if !a.trace.sent {
		return // nothing reached Redis
	}
	unknown := a.trace.firstUnknown && !neverSent(a.trace.cut)
	switch {
	case p.hold == holdNothing:
		if p.undo != nil && unknown {
			e.undo(ctx, p, a.field, a.n) // permits taken from a count, which the engine does not track
		}
		return // nothing can be held
	case unknown, tk != nil && p.handover == handoverThroughRedis:
		// The field is this call's alone: no need to wait for op. A queued
		// Mutex call may have been handed the lock under it.
	case a.trace.reentryUnknown:
		h := e.holds.ref(p.key, orCreate)
		defer e.holds.unref(h)
		_ = h.op.Lock(context.Background())
		defer h.op.Unlock()
		if t := h.term.Load(); h.count == 0 || t.field != a.trace.reentered {
			r = release{} // the hold it re-entered has ended
		} else {
			r = release{h: h, Release: scripts.Release{Field: t.field, From: a.trace.base + a.n, To: a.trace.base}}
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
	e.takeBack(ctx, p, r)
}

// neverSent reports whether each attempt whose own outcome cut will tell
// (see attemptTrace) proves, once it returns, that it never left the
// process. It waits for them cleanupBudget at most: an attempt that a dial
// held past the call's deadline ends with that dial.
func neverSent(cut []<-chan error) bool {
	if len(cut) == 0 {
		return false
	}
	t := time.NewTimer(cleanupBudget)
	defer t.Stop()
	for _, late := range cut {
		select {
		case err := <-late:
			if !unsent(err) {
				return false
			}
		case <-t.C:
			return false
		}
	}
	return true
}

// leaveQueue takes the Mutex call a, queued in Redis, whose hold came
// another way (a handover within the Client), out of the lock's queue in
// Redis, with the field a release there may have handed the lock to, as
// giveUp does for a call that failed. It does so in the background: the
// call returns its hold at once, whose lease runs meanwhile (a stalled
// connection must not keep the call from returning until the lease could
// have run out).
func (e *engine) leaveQueue(ctx context.Context, a *call) {
	if !a.trace.sent {
		return // nothing reached Redis
	}
	p := a.p
	r := release{Release: scripts.Release{Field: a.field, From: a.n, To: 0, Latch: tombstoneTTL, Undo: true, Run: true,
		Waiter: a.ticket().ID}}
	e.background.Go(func() { e.takeBack(ctx, p, r) })
}

// takeBack runs r, the release of what a call left in Redis, within
// cleanupBudget even when ctx has ended, and wakes whom it names.
func (e *engine) takeBack(ctx context.Context, p *protocol, r release) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupBudget)
	defer cancel()
	rep, err := p.release(ctx, r)
	if err != nil {
		p.cfg.logger.Warn("redisync: could not take back what a waiting call left; it expires with its lease or heartbeat",
			"name", p.name, "error", err)
		return
	}
	e.wake(p, rep.Woken, r.To == 0 && rep.Status == 1)
}

// undo runs the protocol's undo for the call field, for n, whose attempt
// had an unknown outcome: what it may have taken is given back, and its late
// copies take nothing. The permits of a count have no lease, so an undo
// that does not reach Redis would leave them taken for good (the attempt
// may land when Redis comes back): it is sent again, backing off up to a
// second, until Redis answers or the Client closes.
func (e *engine) undo(ctx context.Context, p *protocol, field string, n int) {
	ctx = context.WithoutCancel(ctx)
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, cleanupBudget)
		err := p.undo(actx, field, n)
		cancel()
		if err == nil {
			return
		}
		if attempt == 1 || attempt%100 == 0 {
			p.cfg.logger.Warn("redisync: could not yet give back what a call that gave up may have taken; retrying",
				"name", p.name, "permits", n, "attempts", attempt, "error", err)
		}
		if !e.backOff(attempt, time.Time{}) {
			p.cfg.logger.Error("redisync: the Client closed before it could give back what a call that gave up may have taken",
				"name", p.name, "permits", n, "error", err)
			return
		}
	}
}

// retire gives back, in the background and latched, what the latest attempt
// of the call a took but may not return, as its lease could have run out
// before its reply was read (see engine.current): a Semaphore's permits, an
// ExpirableSemaphore's. The call's next attempt asks with a new field: the
// old one's entry may be gone from Redis already, or latched.
func (e *engine) retire(a *call) {
	p, field, n := a.p, a.field, a.n
	a.field = ""
	a.trace.forgetFirst()
	if p.hold == holdNothing {
		e.background.Go(func() { e.undo(context.Background(), p, field, n) })
		return
	}
	r := release{Release: scripts.Release{Field: field, From: n, To: 0, Latch: tombstoneTTL, Undo: true}}
	e.background.Go(func() { e.takeBack(context.Background(), p, r) })
}

// unreplicated undoes acquisition acq of a (h.op held), which fewer replicas
// acknowledged in time than asked (or whose WAIT failed), and returns the
// error that says so. The call's next attempt takes a new identity: this
// one's is latched.
func (e *engine) unreplicated(ctx context.Context, a *call, acq *acquisition, s *scripts.Sync) error {
	p := a.p
	r := release{Release: scripts.Release{Field: acq.field, From: a.n, Latch: latchTTL, Undo: true}}
	if a.trace.firstUnknown {
		r.Latch = tombstoneTTL
	}
	a.field = ""
	a.trace.forgetFirst()
	e.cleanUp(p.name, func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupBudget)
		defer cancel()
		if rep, err := p.release(rctx, r); err != nil {
			p.cfg.logger.Warn("redisync: could not undo an acquisition that was not replicated; it expires with its lease",
				"name", p.name, "error", err)
		} else {
			e.wake(p, rep.Woken, rep.Status == 1)
		}
	})
	if s.Failed != nil {
		// Not ErrNotReplicated, which Lock retries: a WAIT the server
		// refuses is refused again.
		return lockError(p.primitive, p.name, fmt.Errorf("WAIT for %d replicas failed (WithSyncReplicas needs it): %w", s.Wanted, s.Failed))
	}
	return lockError(p.primitive, p.name, fmt.Errorf("%w: %d of %d acknowledged within %v", ErrNotReplicated, s.Acked, s.Wanted, s.Timeout))
}

// leave takes w out of its queue. When a hold was handed to w meanwhile, it
// gives it back; when w was first and its call failed (callErr), the next
// one asks Redis in its place.
func (e *engine) leave(ctx context.Context, w *place, callErr error) {
	if !e.handovers.remove(w, callErr) {
		x := <-w.ch // sent before w left the queue, and the last sent: a hold
		e.cleanUp(w.p.name, func() { e.giveBack(ctx, w.p, x) })
	}
}

// giveBack releases in Redis the hold x, handed to a call of p that does
// not take it; the release wakes the lock's next waiter.
func (e *engine) giveBack(ctx context.Context, p *protocol, x handover) {
	e.handovers.taken(x.t, nil)
	if !e.leases.Remove(x.t.lease) {
		x.t.lost(ErrLeaseExpired)
	}
	r := release{Release: scripts.Release{Field: x.t.field, LatchKey: x.t.latchKey, From: 1, To: 0, Latch: latchTTL, Run: x.t.queued}}
	_ = e.settle(context.WithoutCancel(ctx), p, x.t, r, finalRelease)
}
