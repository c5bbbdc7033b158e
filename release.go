package redisync

import (
	"context"
	"time"

	"github.com/go-redisync/redisync/internal/scripts"
)

// releaseHold leaves n holds (permits) of p's owner. It returns an error
// wrapping ErrNotHeld when the owner holds fewer here, and ctx.Err() when ctx
// ends while another call of the owner keeps it waiting (the hold is then
// unchanged) or before Redis confirmed the release (which then goes on).
func (e *engine) releaseHold(ctx context.Context, p *protocol, n int) error {
	h := e.holds.ref(p.key, existing)
	if h == nil {
		return lockError(p.primitive, p.name, ErrNotHeld)
	}
	defer e.holds.unref(h)
	if err := h.op.Lock(ctx); err != nil {
		return err
	}
	defer h.op.Unlock()
	if n > h.count+h.lost {
		return lockError(p.primitive, p.name, ErrNotHeld)
	}
	if taken := min(n, h.lost); taken > 0 { // a Semaphore's lost permits first
		if h.lost -= taken; h.lost == 0 && h.count == 0 {
			e.holds.unref(h)
		}
		if n -= taken; n == 0 {
			return nil
		}
	}
	t := h.term.Load()
	if ended, err := t.result(); ended && !mutantUnlockAny {
		// Lost or closed earlier: the owner's release acknowledges it.
		if h.setCount(h.count - n); h.count == 0 {
			e.holds.finish(h)
		}
		return err
	}
	if n == 1 && e.handOver(h, p, t) {
		return nil
	}
	if h.count > n {
		h.setCount(h.count - n)
		return e.settle(ctx, p, t, release{h: h, Release: scripts.Release{Field: t.field, From: h.count + n, To: h.count}}, partialRelease)
	}
	if !e.leases.Remove(t.lease) && !mutantUnlockAny {
		// The scheduler has just found it lost; its report is on the way.
		// The release below still frees what may be left of it in Redis.
		t.lost(ErrLeaseExpired)
	}
	r := release{h: h, Release: scripts.Release{Field: t.field, LatchKey: t.latchKey, From: n, To: 0, Latch: latchTTL, Run: t.queued}}
	if t.ambiguous {
		r.Latch = tombstoneTTL
	}
	e.holds.finish(h)
	return e.settle(ctx, p, t, r, finalRelease)
}

// A releaseEnd says whether a release is a hold's last (it ends the term)
// or leaves it held (a re-entry's).
type releaseEnd uint8

const (
	partialRelease releaseEnd = iota
	finalRelease
)

// settle runs release r of term t (end: whether it is the hold's last) for up to
// releaseBudget and files its outcome (see afterRelease). When ctx ends
// before Redis has answered (or had ended already), or a final release
// failed in a way that leaves it undone (see unfinished), settle returns
// ctx.Err() (or that failure) and finishes the release in the background,
// detached from ctx (see finish): a repeat is harmless, as a release acts on
// one hold's identity. (A release that keeps some holds is not
// repeated after a failure: the owner's later calls set the count over it,
// and a Semaphore's repeat, sent after them, would give back permits that
// they took.)
func (e *engine) settle(ctx context.Context, p *protocol, t *term, r release, end releaseEnd) error {
	var err error
	if ctx.Err() == nil {
		var rep scripts.Released
		rep, err = releaseWithin(ctx, p, r)
		if err == nil || !end.leavesUndone(err) && ctx.Err() == nil {
			if err != nil {
				err = lockError(p.primitive, p.name, err)
			}
			return e.afterRelease(p, t, rep, err, end)
		}
	}
	e.background.Go(func() { e.finish(p, t, r, end) })
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return lockError(p.primitive, p.name, err)
}

// finish runs release r of term t in the background and files its outcome.
// A release that Redis did not take is sent again, backing off up to a
// second, until Redis answers, the hold's lease has run out (a lease after
// the release began: the watchdog renews it no more), or the Client closes
// (Close waits for the attempt in flight). A failover pauses writes for
// seconds: the lock is free as soon as Redis takes the release again, not
// a lease later.
func (e *engine) finish(p *protocol, t *term, r release, end releaseEnd) {
	expired := time.Now().Add(p.cfg.leaseTTL())
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), releaseBudget)
		rep, err := p.release(ctx, r)
		cancel()
		if err == nil || !end.leavesUndone(err) || !e.backOff(attempt, expired) {
			if err != nil {
				err = lockError(p.primitive, p.name, err)
				p.cfg.logger.Warn("redisync: unlock failed; the lock expires with its lease", "name", p.name, "error", err)
			}
			e.afterRelease(p, t, rep, err, end)
			return
		}
	}
}

// leavesUndone reports whether a release that ends a hold this way and
// failed with err must be finished in the background: a final one that may
// not have run (see unfinished). A partial release is not repeated.
func (end releaseEnd) leavesUndone(err error) bool { return end == finalRelease && unfinished(err) }

// unfinished reports whether a release that failed with err may not have
// run in Redis, or not everywhere, so that it must be finished: a transport
// failure or a deadline (rueidis reports its connection's deadline as the
// context's, before the context itself has ended; a quorum, a server's share
// of the call that ended), or a server that did not know the script. Any
// other error reply is Redis' answer, which a repeat would get again.
func unfinished(err error) bool { return ambiguous(err) || scripts.IsNoScript(err) }

// releaseWithin runs release r of p with a deadline releaseBudget away, or,
// under a context that cannot end (Unlock's), the handle's call timeout (see
// WithCallTimeout): an Unlock that Redis does not answer returns then, and
// its release is finished in the background (see settle).
func releaseWithin(ctx context.Context, p *protocol, r release) (scripts.Released, error) {
	if ctx.Done() == nil {
		if mutantUnlockPool {
			b, free := pooledBudget(ctx, releaseBudget)
			defer free()
			return p.release(b, r)
		}
		ctx, cancel := p.cfg.calls.within(ctx)
		defer cancel()
		return p.release(ctx, r)
	}
	rctx, cancel := context.WithTimeout(ctx, releaseBudget)
	defer cancel()
	return p.release(rctx, r)
}

// afterRelease files the outcome of a release of term t: a hold found gone
// (or, for a Semaphore, changed by someone else) is lost; a final release
// ends the term (with err when Redis could not confirm it). It wakes the
// lock's local waiters, and returns the term's end if it ended, else err.
func (e *engine) afterRelease(p *protocol, t *term, rep scripts.Released, err error, end releaseEnd) error {
	switch {
	case rep.Status < 0 && err == nil:
		e.lose(t, ErrHoldGone)
	case end == finalRelease:
		t.end(err)
	}
	e.wake(p, rep.Woken, end == finalRelease)
	if _, ended := t.result(); ended != nil {
		return ended
	}
	return err
}

// wake wakes this process's waiters of p's lock after a release: those it
// named (a queued lock, or a Mutex handed to a queued waiter), else, when
// released is set, one (or all, as p.wake says).
func (e *engine) wake(p *protocol, woken []string, released bool) {
	switch {
	case p.wake == wakeOwn:
		for _, id := range woken {
			e.wakeEvery(p.channel + ":" + id)
		}
	case p.wake == wakeNamed || len(woken) > 0:
		for _, tag := range woken {
			if !e.notify.WakeTag(p.channel, tag) && p.handover == handoverThroughRedis {
				e.handovers.pokeFirst(p) // handed to another process's waiter: this Client's queue there
			}
		}
	case !released:
	case p.wake == wakeEvery:
		e.wakeEvery(p.channel)
	default:
		e.notify.WakeOne(p.channel)
	}
}

// wakeEvery wakes every waiter of this process on channel: after a release
// of a lock whose release concerns them all, a ForceUnlock, or a
// WaitGroup's counter reaching zero.
func (e *engine) wakeEvery(channel string) { e.notify.WakeAll(channel) }

// handOver hands h's hold (h.op held, one hold left, not ended) to the
// longest-waiting call of this Client on the same lock that may take it
// (a Mutex call whose handle has the same lease, asking for no more
// replicas than the hold's acquisition had), the holder's own owner's
// included, when the bounds of a run of handovers allow; it reports whether
// it did. A hold one of whose acquire attempts had an unknown outcome is
// never handed on: a late copy of that attempt must find it released (see
// release.go).
func (e *engine) handOver(h *hold, p *protocol, t *term) bool {
	if h.count != 1 || p.handover == noHandover || t.ambiguous {
		return false // a re-entered hold, a lock that hands nothing on, or one a late copy may find
	}
	if h.streak >= maxHandovers || time.Since(h.fromRedis) >= maxHandoverTime {
		return false // the run of handovers is over: the next goes through Redis
	}
	if !e.handovers.handOver(h, p, t, e.leases.Replace) {
		return false
	}
	if mutantHandoverRelease {
		_, _ = p.release(context.Background(), release{Release: scripts.Release{Field: t.field, From: 1, Latch: latchTTL}})
	}
	t.end(nil)
	e.holds.finish(h)
	return true
}
