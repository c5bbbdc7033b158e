package redisync

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-redisync/redisync/internal/scripts"
)

// tryFirst is the fast path of a waiting call a: when nothing says that its
// lock is contended in this process (no subscription of its channel lingers
// from a recent wait) and no observer is to hear of the wait, it makes the
// call's first attempt and reports whether it acquired. An attempt that did
// not is kept in a, and the wait loop (acquire) starts from it.
func (e *engine) tryFirst(ctx context.Context, a *call) bool {
	if a.p.cfg.observer != nil || e.isClosed() || e.notify.Confirmed(a.p.channel) {
		return false
	}
	res, err := e.try(ctx, a)
	if err == nil && res.acquired {
		if e.current(a) {
			return true
		}
		res, err = attempt{}, lockError(a.p.primitive, a.p.name, errStaleHold)
	}
	a.first.tried, a.first.res, a.first.err = true, res, err
	return false
}

// try makes one attempt of a, queueing with its ticket if it has one. Under a
// context that cannot end (Lock's, TryLock's), the attempt is bounded by the
// handle's call timeout.
func (e *engine) try(ctx context.Context, a *call) (attempt, error) {
	ctx, cancel := a.p.cfg.calls.within(ctx)
	defer cancel()
	e.listening(ctx)
	e.takeBacks.settled(ctx, a.p.name)
	if a.check != nil {
		if err := a.check(); err != nil {
			return attempt{}, err
		}
	}
	res, t, value, err := e.tryHold(ctx, a)
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
func (e *engine) tryHold(ctx context.Context, a *call) (attempt, *term, int64, error) {
	p, tk := a.p, a.ticket()
	h := e.holds.ref(p.key, orCreate)
	defer e.holds.unref(h)
	if !e.lockOp(ctx, h, a) {
		return attempt{}, nil, 0, ctx.Err()
	}
	defer h.op.Unlock()
	acq := acquisition{h: h, n: a.n, tk: tk, permitLease: a.permitLease}
	pre, stop, err := e.prepare(h, a, &acq)
	if stop {
		return pre, nil, 0, err
	}
	ownerHolds := pre.ownerHolds
	sent := time.Now()
	a.trace.sent = true
	actx, sync := syncFor(ctx, p, &acq)
	r, err := p.acquire(actx, acq)
	if r.Spent {
		a.field = "" // latched: the next attempt takes a new identity
		a.trace.forgetFirst()
	}
	if err != nil {
		if ambiguous(err) && !r.Spent && !unsent(err) {
			a.trace.unknown(err, acq.count)
		}
		return attempt{}, nil, 0, lockError(p.primitive, p.name, err)
	}
	if nothing, err := e.nothingToHold(a, h, r, sent); nothing {
		return attempt{}, nil, 0, err
	}
	switch {
	case r.Outcome == scripts.Complete:
		return attempt{complete: true}, nil, 0, nil
	case r.Outcome == scripts.Busy:
		a.queued(sent)
		return attempt{wait: waitMS(r.Value), ownerHolds: ownerHolds, channel: r.Channel, place: r.Place, fresh: r.Fresh,
			mayQueue: tk == nil && p.handover == handoverThroughRedis && a.takesHandover()}, nil, 0, nil
	case sync != nil && (sync.Failed != nil || sync.Acked < sync.Wanted):
		return attempt{}, nil, 0, e.unreplicated(ctx, a, &acq, sync)
	case sync != nil:
		acq.synced = sync.N
	}
	if r.Within > 0 {
		acq.within = r.Within // a quorum's validity
	}
	return e.took(h, a, &acq, sent), h.term.Load(), r.Value, nil
}

// prepare readies the acquisition acq of the call a on h, whose op it
// holds: what the owner holds already (see owned), else the call's identity.
// With stop, the attempt ends with res and err without asking Redis; else
// res.ownerHolds says that the owner's hold keeps the call waiting.
func (e *engine) prepare(h *hold, a *call, acq *acquisition) (res attempt, stop bool, err error) {
	if h.count > 0 {
		res, stop, err = e.owned(h, a, acq)
		if stop {
			return res, true, err
		}
	}
	if acq.count == 0 {
		if e.handovers.queuedBehind(a, acq.tk) {
			return attempt{wait: -1}, true, nil // a Busy reply without asking: a local waiter is ahead
		}
		acq.field, acq.latchKey = e.callField(a)
	}
	return attempt{ownerHolds: res.ownerHolds}, false, nil
}

// nothingToHold reports whether the reply r to the attempt of a sent at
// sent leaves the call nothing to hold, and why: the owner's hold is gone,
// a late copy was refused, or a Complete reply came after the call's grant
// ran out.
func (e *engine) nothingToHold(a *call, h *hold, r scripts.Reply, sent time.Time) (bool, error) {
	p := a.p
	switch {
	case r.Outcome == scripts.Gone && h.term.Load() == nil:
		// No term of the owner: what is gone is a grant of the call's own
		// that it never returned (see retire). It asks afresh.
		e.retire(a)
		return true, lockError(p.primitive, p.name, errStaleHold)
	case r.Outcome == scripts.Gone:
		t := h.term.Load()
		e.lose(t, ErrHoldGone)
		_, err := t.result()
		return true, err
	case r.Outcome == scripts.Refused:
		return true, lockError(p.primitive, p.name, errRefused)
	case r.Outcome == scripts.Complete && a.outlived(sent):
		e.retire(a)
		return true, lockError(p.primitive, p.name, errStaleHold)
	}
	return false, nil
}

// current reports whether the hold that the call a has just got may be
// returned: its term has not ended, and its lease's deadline (as this
// process reckons it, from when the acquire was sent) has not passed. A
// reply read after the lease it set could have run out (the request or the
// reply held up, the process paused), or a hold whose lease ran out before
// the call could return it, is no hold: another may have the lock by now.
// Such a hold is dropped (see drop) and current reports false.
func (e *engine) current(a *call) bool {
	t := a.term
	if t == nil || t.lease == nil || a.p.hold == holdNothing {
		return true
	}
	if ended, _ := t.result(); !ended && e.leases.Current(t.lease) {
		return true
	}
	if a.p.hold == holdPermits && mutantSemLate {
		return true // a late grant of permits taken for a hold
	}
	e.drop(a, t)
	return false
}

// drop ends term t, which the call a got but may not return (see current),
// as lost, and takes a's holds out of the owner's record, as a release of a
// lost hold does. What is left of the hold in Redis expires with its lease.
// When its field is the call's own, a lock's next attempt adopts it if Redis
// still has it, and a call that gives up releases it (the attempt counts as
// of unknown outcome). A Semaphore's permits are given back at once, in the
// background and latched, and its next attempt asks with a new field: its
// entry may be gone from Redis already (reaped by another's acquire), and a
// retry with the old one would find only that.
func (e *engine) drop(a *call, t *term) {
	p := a.p
	e.lose(t, ErrLeaseExpired)
	switch {
	case t.field != a.field:
	case p.hold == holdPermits:
		e.retire(a)
	default:
		a.trace.firstUnknown, a.trace.cut = true, nil
	}
	a.term = nil
	h := e.holds.ref(p.key, existing)
	if h == nil {
		return
	}
	n := a.n
	// Another call of the owner holds op for a round trip, which a Redis
	// that does not answer makes long: the record is put right in the
	// background, and a call of the owner waits for it (the term ended).
	e.cleanUp(p.name, func() {
		defer e.holds.unref(h)
		_ = h.op.Lock(context.Background())
		defer h.op.Unlock()
		if h.term.Load() == t && h.count >= n {
			if h.setCount(h.count - n); h.count == 0 {
				e.holds.finish(h)
			}
		}
	})
}

// callField returns the identity the first acquire of call a asks for, and
// its latch key: new ones on its first attempt, the same on its retries.
func (e *engine) callField(a *call) (field, latchKey string) {
	if a.field == "" {
		a.field, a.latchKey = e.newField(a.p.key.owner, a.p.suffix, a.p.latch)
	}
	return a.field, a.latchKey
}

// lockOp takes h's op for a: at once or not at all for a single attempt,
// else waiting as long as ctx lasts.
func (e *engine) lockOp(ctx context.Context, h *hold, a *call) bool {
	if a.single {
		return h.op.TryLock()
	}
	return h.op.Lock(ctx) == nil
}

// owned decides an attempt of a while its owner holds (h.count > 0): it
// fills acq for a re-entry, or returns the attempt's result with stop set.
func (e *engine) owned(h *hold, a *call, acq *acquisition) (res attempt, stop bool, err error) {
	p := a.p
	ended, err := h.term.Load().result()
	ticketed := p.wait == waitWithTicket && acq.tk != nil // a FairMutex's or Semaphore's call with its place
	switch {
	case ended && p.hold == holdPermits:
		e.holds.setAside(h) // a new term; the lost permits wait for Release
		return attempt{}, false, nil
	case a.mode == waitFree && ticketed && !ended:
		// A second Lock of the owner queues now, so that its turn is fixed
		// by arrival, but never takes until the owner's hold is released.
		acq.queueOnly = true
		return a.behindOwner(h), false, nil
	case a.mode == waitFree, a.mode == waitHandover, a.mode == share && ended:
		return a.behindOwner(h), true, nil
	case ended:
		return attempt{}, true, err
	}
	acq.field, acq.latchKey, acq.count = h.term.Load().field, h.term.Load().latchKey, h.count
	a.trace.reentered, a.trace.base, a.trace.reentryUnknown = acq.field, h.count, false
	return attempt{}, false, nil
}

// behindOwner is the attempt of a that its owner's hold h keeps waiting
// (h.op held): a waiting call's local channel is woken when h ends.
func (a *call) behindOwner(h *hold) attempt {
	if !a.single {
		a.ch.localChan() // made before the hold's end can wake it
		h.wakeWhenFree(&a.ch)
	}
	return attempt{ownerHolds: true}
}

// took records an acquisition of a (h.op held): a first one begins a term,
// a re-entry adds to it.
func (e *engine) took(h *hold, a *call, acq *acquisition, sent time.Time) attempt {
	p := a.p
	if acq.count == 0 {
		t := newObservedTerm(p.cfg, p.primitive, p.name)
		t.field, t.latchKey, t.ambiguous, t.synced = acq.field, acq.latchKey, a.trace.firstUnknown, acq.synced
		t.queued = acq.tk != nil || acq.within > 0 // a queued call's, or one handed through Redis
		h.setCount(a.n)
		t.lease = p.newLease(t)
		e.begin(h, t, sent, acq.within)
	} else {
		h.setCount(h.count + a.n)
		e.leases.Touch(h.term.Load().lease, sent)
	}
	if e.isClosed() {
		// Close may have ended holds before this one was recorded.
		h.term.Load().end(lockError(p.primitive, p.name, ErrClosed))
	}
	return attempt{acquired: true, reentered: acq.count > 0}
}

// syncFor returns the context for acquisition acq of p: with
// WithSyncReplicas, a first acquire's carries the request that replicas
// acknowledge it.
func syncFor(ctx context.Context, p *protocol, acq *acquisition) (context.Context, *scripts.Sync) {
	if p.cfg.syncReplicas == 0 || acq.count > 0 || p.hold == holdNothing {
		return ctx, nil
	}
	s := &scripts.Sync{N: p.cfg.syncReplicas, Timeout: p.cfg.syncTimeout}
	return scripts.WithSync(ctx, s), s
}

// begin records a first acquire of h (h.op held) as term t, whose expiry was
// set by the request sent at sent, and starts watching its lease.
func (e *engine) begin(h *hold, t *term, sent time.Time, within time.Duration) {
	h.fromRedis = time.Now()
	if t.obs != nil {
		t.obs.since = sent
	}
	h.term.Store(t)
	forced := e.holds.record(h)
	if within > 0 {
		e.leases.AddWithin(t.lease, sent, within)
	} else {
		e.leases.Add(t.lease, sent)
	}
	if forced {
		e.lose(t, ErrForceUnlocked) // deleted by a ForceUnlock before it was recorded
	}
}

// lastHold numbers the holds of the process: a hold's identity in Redis is
// "<client-uuid>:<n>", as Redisson's field is "<uuid>:<thread-id>".
var lastHold atomic.Uint64

// newField returns the identity of a new hold of owner, ending in suffix: a
// field no other hold has had. With latch set, the prefix of the lock's latch
// keys, it returns the hold's latch key too, latch + ":" + field, and makes
// the field its tail: the scripts take the latch as a key of its own, and
// one allocation for both keeps an uncontended Lock and Unlock within
// benchmarks' allocsBudget. (The owner-field mutant gives every hold of an
// owner the same field, "<client-uuid>:<owner>".)
func (e *engine) newField(owner uint64, suffix, latch string) (field, latchKey string) {
	var buf [128]byte
	b := buf[:0]
	if latch != "" {
		b = append(append(b, latch...), ':')
	}
	b = append(append(b, e.id...), ':')
	if mutantOwnerField {
		b = strconv.AppendUint(b, owner, 10)
	} else {
		b = strconv.AppendUint(b, lastHold.Add(1), 10)
	}
	s := string(append(b, suffix...))
	if latch == "" {
		return s, ""
	}
	return s[len(latch)+1:], s
}

// waitMS converts a wait bound in milliseconds from a script (negative if
// unknown), bounded so that a deadline written outside redisync cannot
// overflow.
func waitMS(ms int64) time.Duration {
	return time.Duration(min(max(ms, -1), int64(time.Hour/time.Millisecond))) * time.Millisecond
}

// tryOnce makes the single attempt of a Try call and gives back what it may
// have left when its outcome is unknown.
func (e *engine) tryOnce(ctx context.Context, a *call) (bool, error) {
	if e.isClosed() {
		return false, lockError(a.p.primitive, a.p.name, ErrClosed)
	}
	a.single = true
	res, err := e.try(ctx, a)
	if res.acquired && !e.current(a) {
		res, err = attempt{}, lockError(a.p.primitive, a.p.name, errStaleHold)
	}
	if res.acquired {
		a.p.observe(ctx, acquiredEvent(time.Time{}, res))
	}
	if err != nil && a.uncertain() {
		e.cleanUp(a.p.name, func() { e.giveUp(ctx, a) })
	}
	if ctx.Err() != nil && !res.acquired {
		return false, ctx.Err()
	}
	return res.acquired, err
}

// acquiredEvent is the event of the successful attempt res of a call begun at start.
func acquiredEvent(start time.Time, res attempt) Event {
	e := Event{Kind: EventAcquired, Reentrant: res.reentered, LocalHandover: res.localHandover, Handed: res.handed}
	if !start.IsZero() {
		e.Wait = time.Since(start)
	}
	return e
}
