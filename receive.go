package redisync

import (
	"context"
	"strconv"
	"time"
)

// A waiting call's side of the handovers: a Mutex call that queues in Redis
// early, and takes the lock a release handed it there; a call that adopts
// the hold a release of its Client handed it.

// A Mutex's waiting calls queue in Redis, next to the lock (our own keys,
// which Redisson ignores), and a release hands the lock to the first live
// one inside its script: the waiter's field holds the lock at once, and the
// message names the waiter's place. The waiter takes the hold from the
// message without asking Redis again, so a handover costs the release's
// message and nothing else, and no other acquire races it for the lock.
//
// Waiters stay crash-safe by heartbeat (the scheduler's batch, as for a
// FairMutex): a release skips and removes a waiter whose heartbeat lapsed,
// and the hold it hands over expires at the waiter's heartbeat deadline
// until the waiter renews it with its lease, so a waiter that died just
// before it was handed the lock keeps it for at most the heartbeat timeout.
// A call queues only after a first attempt found the lock taken (most
// acquisitions need no queue), and a call whose hold came another way (a
// handover within the Client) leaves the queue when it returns (giveUp).

// queueEarly makes the waiting Mutex call a queue in Redis with its
// first attempt, joined to its lock's channel beforehand, when the lock is
// contended in this process: the channel's subscription is in place (a
// waiter of this Client waited for the lock within the subscription's
// linger) and no other call of the Client waits for it. A contended call
// then spares the attempt that would find the lock taken before queueing;
// one that finds it free takes it as mutex_acquire would.
func (e *engine) queueEarly(a *call) {
	p := a.p
	if p.handover != handoverThroughRedis || !a.takesHandover() || a.uncertain() {
		return // no queue in Redis, or a call that does not take from it
	}
	if !e.notify.Confirmed(p.channel) || e.handovers.waiting(p) > 0 {
		return // the lock is not contended in this process, or others wait first
	}
	q := a.inRedis()
	if q == nil {
		return // a way that does not queue in Redis
	}
	e.callField(a)
	a.ch.joined = p.channel
	a.ch.w = e.notify.Join(p.channel, p.wake.dispatch(), "")
	q.tk = p.ticket(a)
}

// placeTag is the tag of a waiter at place n in a Mutex's queue: the
// message of a release that hands it the lock ("" for no place).
func placeTag(n int64) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}

// takeHandover makes the lock that a release in Redis handed to the queued
// call a (a wake-up named its place) the call's hold, without asking
// Redis, and reports whether it did. The hold's deadline is the call's
// heartbeat timeout after the latest confirmation of its place was sent:
// the release found the place after that, and left the lock to expire at
// the place's heartbeat deadline. It does not take the hold when the place
// is no longer confirmed (its heartbeat lapsed), its deadline has passed
// (the process was paused), or the call's owner holds the lock meanwhile:
// the call then asks Redis, which answers what the release did (the call's
// field is there, and the attempt adopts it), or gives it back when it
// returns.
func (e *engine) takeHandover(ctx context.Context, a *call) bool {
	p := a.p
	since, ok := a.ticket().Confirmed()
	if !ok || a.field == "" || time.Since(since) >= p.cfg.heartbeat {
		return false // after a pause past the deadline, only Redis knows
	}
	h := e.holds.ref(p.key, orCreate)
	defer e.holds.unref(h)
	if !e.lockOp(ctx, h, a) {
		return false
	}
	defer h.op.Unlock()
	if h.count > 0 {
		return false
	}
	acq := acquisition{h: h, n: a.n, field: a.field, latchKey: a.latchKey, within: p.cfg.heartbeat}
	e.took(h, a, &acq, since)
	t := h.term.Load()
	a.value, a.term = 0, t
	p.cur.Store(t)
	return true
}

// adopt makes the hold x, handed to the waiting call a, a's own (a's owner
// holds nothing), and reports whether it did. It does not when x ended on
// its way (lost, Close, ForceUnlock) or when a cannot take it (its owner
// holds meanwhile, or an attempt of the call had an unknown outcome, whose
// late copy could outlive the hold); a hold it cannot take is given back,
// in the background (see cleanUp): the call does not wait for Redis.
func (e *engine) adopt(ctx context.Context, a *call, x handover) bool {
	p := a.p
	h := e.holds.ref(p.key, orCreate)
	defer e.holds.unref(h)
	if h.op.Lock(ctx) != nil {
		e.cleanUp(p.name, func() { e.giveBack(ctx, p, x) })
		return false
	}
	ended, ok := false, false
	e.handovers.taken(x.t, func() { // in one step with handing: endHolds sees it in either
		ended, _ = x.t.result()
		if ok = !ended && h.count == 0 && !a.uncertain(); ok {
			h.setCount(1)
			h.streak, h.fromRedis = x.streak, x.fromRedis
			h.term.Store(x.t)
			e.holds.keep(h) // the hold itself keeps the record
		}
	})
	h.op.Unlock()
	switch {
	case ok:
		a.term = x.t
		p.cur.Store(x.t)
		if e.isClosed() {
			x.t.end(lockError(p.primitive, p.name, ErrClosed))
		}
	case !ended:
		e.cleanUp(p.name, func() { e.giveBack(ctx, p, x) })
	}
	return ok
}
