package redisync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-redisync/redisync/internal/notify"
)

// pollInterval bounds a wait when the holder's lease is unknown.
const pollInterval = time.Second

// transientBudget is how long LockContext rides out a run of transport
// failures (a killed connection, a reconnect) before it returns the error.
const transientBudget = time.Second

// acquire is the waiter loop of every primitive, for the call a, queued in
// Redis with tk when the lock queues its waiters (tk is nil otherwise). It
// starts from the attempt of the fast path (tryFirst) when there was one,
// else it tries; when the lock is taken it joins the lock's channel (confirmed before
// the next try, so a release in between is not missed) and waits for a
// wake-up, the bound the try gave (the holder's remaining lease, or the
// heartbeat deadline of the waiter ahead), a lapsed heartbeat, a handover from
// the owner's own release, or the end of ctx; then it tries again. A lost
// message costs at most one lease, never a hang.
//
// A verdict (see verdict) is returned at once. With retryForever (Lock),
// failures are logged and retried with backoff; otherwise an error reply is
// returned at once and transport failures are retried for transientBudget.
// When ctx ends, acquire returns ctx.Err() unwrapped. It leaves no
// subscription and no heartbeat behind and, when it fails, no queue entry and
// no hold (see giveUp).
func (e *engine) acquire(ctx context.Context, a *call, tk *ticket, p persistence) (err error) {
	a.way, a.persist = newWay(a.p, tk), p
	if a.p.cfg.observer != nil {
		a.p.observe(ctx, Event{Kind: EventAcquireAttempt})
		a.start = time.Now() // the call's start
	}
	defer func() { e.endWait(ctx, a, err) }()
	tried := a.first.tried
	if !tried && tk == nil {
		e.queueEarly(a)
	}
	for {
		res, tryErr := a.first.res, a.first.err
		if !tried {
			if e.isClosed() {
				return lockError(a.p.primitive, a.p.name, ErrClosed)
			}
			res, tryErr = e.try(ctx, a)
		}
		tried = false
		if ctx.Err() != nil && !res.acquired && !res.complete {
			return ctx.Err()
		}
		f, done, err := e.plan(ctx, a, res, tryErr)
		if done {
			return err
		}
		if done, err := e.await(ctx, a, f); done {
			return err
		}
	}
}

// ending returns a channel that is closed when ctx ends or life does (the
// Client closes): what ends a wait of the call, made at its first wait
// (most acquisitions need none) and released by stopEnding.
func (c *channelWait) ending(ctx, life context.Context) <-chan struct{} {
	if ctx.Done() == nil {
		return life.Done() // Lock's: only the Client's end ends it
	}
	if c.end == nil {
		c.end, c.cancelEnd = context.WithCancel(ctx)
		c.unhookEnd = context.AfterFunc(life, c.cancelEnd)
	}
	return c.end.Done()
}

// stopEnding releases what ending made, if anything.
func (c *channelWait) stopEnding() {
	if c.end != nil {
		c.unhookEnd()
		c.cancelEnd()
		c.end, c.cancelEnd, c.unhookEnd = nil, nil, nil
	}
}

// sleep sets a's timer to d.
func (a *call) sleep(d time.Duration) {
	if a.ch.timer == nil {
		a.ch.timer = time.NewTimer(d)
	} else {
		a.ch.timer.Reset(d)
	}
}

// plan decides what an attempt's outcome means for the call a: done with
// the call's result, or what to wait for before the next attempt.
func (e *engine) plan(ctx context.Context, a *call, res attempt, tryErr error) (f waitFor, done bool, err error) {
	p := a.p
	if tryErr == nil && res.acquired && !e.current(a) {
		res, tryErr = attempt{}, lockError(p.primitive, p.name, errStaleHold)
	}
	switch {
	case tryErr != nil:
		backoff, err := e.failed(ctx, a, tryErr)
		if err != nil {
			return f, true, err
		}
		f.bound = backoff
	case res.complete:
		a.failing.n = 0
		p.observe(ctx, Event{Kind: EventCompleted, Wait: time.Since(a.start)})
		return f, true, nil
	case res.acquired:
		a.failing.n = 0
		if q := a.inRedis(); q != nil {
			q.acquired(ctx, p, res)
		}
		p.observe(ctx, acquiredEvent(a.start, res)) // cheap without an observer: no start
		return f, true, nil
	default:
		a.failing.n = 0
		f = e.waitPlan(ctx, a, res)
	}
	f = a.way.(way).plan(e, a, res, f)
	a.sleep(f.bound)
	return f, false, nil
}

// failed files the failed attempt of a (tryErr) and returns the call's error
// when the call ends with it: a verdict, an error reply, or transport
// failures past transientBudget when the call returns errors; otherwise how
// long to back off.
func (e *engine) failed(ctx context.Context, a *call, tryErr error) (time.Duration, error) {
	p := a.p
	if a.failing.n == 0 {
		a.failing.since = time.Now()
	}
	if a.givesUp(tryErr) {
		if ambiguous(tryErr) && !verdict(tryErr) && ctx.Err() == nil {
			// The caller's context has not ended: say what did, or a
			// "context deadline exceeded" from the attempts' own bound
			// reads as the caller's.
			tryErr = fmt.Errorf("%w (no answer from Redis for %v; the caller's context had not ended)",
				tryErr, time.Since(a.failing.since).Round(time.Millisecond))
		}
		return 0, tryErr
	}
	a.failing.n++
	if w := a.placeInLine(); w != nil && errors.Is(tryErr, ErrNotReplicated) {
		e.handovers.requeue(w) // Lock retries behind the Client's other waiting calls
	}
	if a.logsFailure(tryErr) {
		p.cfg.logger.Warn("redisync: lock attempts failing; retrying", "name", p.name, "attempts", a.failing.n, "error", tryErr)
	}
	d := min(time.Duration(a.failing.n)*20*time.Millisecond, time.Second)
	return d/2 + rand.N(d), nil
}

// givesUp reports whether the call a ends with err, its attempt's failure:
// a verdict always; when it returns errors, an error reply, or transport
// failures past transientBudget.
func (a *call) givesUp(err error) bool {
	switch {
	case verdict(err):
		return true
	case a.persist == retryForever:
		return false
	}
	return !ambiguous(err) || time.Since(a.failing.since) >= transientBudget
}

// logsFailure reports whether Lock's call a logs its failure err: a refusal
// by the server at once (unlike a dropped connection it will not pass by
// itself), a run of failures at the third and every hundredth.
func (a *call) logsFailure(err error) bool {
	if a.persist != retryForever {
		return false
	}
	refused := a.failing.n == 1 && !ambiguous(err)
	return refused || a.failing.n == 3 || a.failing.n%100 == 0
}

// waitPlan returns what the call a, whose attempt found the lock taken
// (res), waits for next: a hold on its way within the Client, or a wake-up
// on the lock's channel, which it joins (again, for another name or a new
// place in Redis' queue) when it must.
func (e *engine) waitPlan(ctx context.Context, a *call, res attempt) waitFor {
	p := a.p
	switch {
	case res.ownerHolds && p.wait != waitWithTicket:
		return waitFor{src: WakeLocal, bound: time.Hour} // the owner's hold ends by the local channel
	case a.ch.w == nil || res.channel != "" && res.channel != a.ch.joined:
		a.ch.tag = ""
		if tk := a.ticket(); tk != nil {
			a.ch.tag = cmp.Or(placeTag(res.place), tk.ID)
			p.observe(ctx, Event{Kind: EventQueued}) // the reply just placed tk in the queue
			a.inRedis().placed = true
		}
		if a.ch.w != nil {
			a.ch.w.Leave(true) // a MultiMutex now waits for another name: a wake-up it had is passed on
		}
		a.ch.joined = cmp.Or(res.channel, p.channel)
		a.ch.w = e.notify.Join(a.ch.joined, p.wake.dispatch(), a.ch.tag)
		return waitFor{wake: a.ch.w.Ready(), bound: waitBound(res.wait)}
	}
	if q := a.inRedis(); q != nil {
		q.kept(ctx, p, res)
	}
	if tag := placeTag(res.place); tag != "" && tag != a.ch.tag {
		a.ch.tag = tag
		a.ch.w.Retag(tag)
	}
	return waitFor{wake: a.ch.w.Wake(), src: WakePubSub, bound: waitBound(res.wait)} // or another source: w knows
}

// newWay returns the way of p's waiting calls, for one call (whose ticket
// in Redis' queue is tk when it has one already).
func newWay(p *protocol, tk *ticket) way {
	switch {
	case p.wait == waitWithTicket:
		return &withTicket{redis: redisQueueing{tk: tk}}
	case p.wait == waitOnChannel:
		return onChannel{}
	case p.handover == handoverThroughRedis:
		return &throughRedis{}
	}
	return &inLine{}
}

// endWait cleans up after the call a returned err: nothing of a waiting
// call stays behind, and nothing of a failed one (see giveUp).
func (e *engine) endWait(ctx context.Context, a *call, err error) {
	p := a.p
	if a.ch.timer != nil {
		a.ch.timer.Stop()
	}
	a.ch.stopEnding()
	a.ch.returned.Store(true)
	a.way.(way).leave(ctx, e, a, err)
	if err != nil {
		// What the call left in Redis is taken back before it returns when
		// Redis answers at once, else in the background: the call returns
		// by its deadline whatever Redis does.
		e.cleanUp(p.name, func() {
			e.giveUp(ctx, a)
			if a.left != nil {
				a.left(ctx) // a waiting writer's claim
			}
		})
		p.observe(ctx, Event{Kind: EventAcquireFailed, Wait: time.Since(a.start), Cause: err})
	}
}

// await waits once for the call a: it reports done with the call's result
// when the wait decides it (a handover, the end of ctx or of the Client),
// and false when the loop should try again.
func (e *engine) await(ctx context.Context, a *call, f waitFor) (done bool, err error) {
	p := a.p
	observe := p.cfg.observer != nil && f.src != 0
	select {
	case x := <-a.ch.local: // nil until the call needs it
		if x.t != nil {
			return e.handedLocally(ctx, a, x), nil
		}
		// A wake-up: passed on by a waiter queued behind, the end of the
		// owner's hold, or the lapse of the call's ticket.
		if !a.inRedis().lapse() && observe {
			p.observe(ctx, wakeEvent(nil, WakeLocal))
		}
	case <-f.wake:
		if e.woken(ctx, a, f.src) {
			return true, nil
		}
	case <-a.ch.timer.C:
		if observe {
			p.observe(ctx, wakeEvent(a.ch.w, WakeTimeout))
		}
	case <-a.ch.ending(ctx, e.life):
		if err := ctx.Err(); err != nil {
			return true, err
		}
		return true, lockError(p.primitive, p.name, ErrClosed)
	}
	return false, nil
}

// handedLocally makes the hold x, handed to the call a by a release of its
// Client, a's own, and reports whether it did (see adopt).
func (e *engine) handedLocally(ctx context.Context, a *call, x handover) bool {
	a.way.leftLine() // a hold leaves the Client's queue
	if e.adopt(ctx, a, x) && e.current(a) {
		a.p.observe(ctx, acquiredEvent(a.start, attempt{acquired: true, localHandover: true}))
		return true
	}
	return false
}

// woken handles the wake-up of the call a from src and reports whether it
// holds the lock now: a Mutex call queued in Redis takes the hold a release
// handed to its place.
func (e *engine) woken(ctx context.Context, a *call, src WakeSource) bool {
	p := a.p
	if p.cfg.observer != nil && src != 0 {
		p.observe(ctx, wakeEvent(a.ch.w, src))
	}
	return a.way.(way).woke(ctx, e, a, src)
}

// waitBound is how long to wait for a wake-up before trying again: until the
// holder's lease runs out (plus a millisecond, as PTTL rounds down).
func waitBound(pttl time.Duration) time.Duration {
	if mutantNoFallback {
		return time.Hour
	}
	if pttl < 0 {
		return pollInterval
	}
	return pttl + time.Millisecond
}

// wakeEvent is the event of the end of a wait, from src (WakeTimeout for
// its timer). For a Pub/Sub waiter, w tells what woke it.
func wakeEvent(w *notify.Waiter, src WakeSource) Event {
	switch {
	case src == WakePubSub && w != nil:
		switch w.Source() {
		case notify.FromMessage:
		case notify.FromResubscribe:
			src = WakeResubscribe
		default:
			src = WakeLocal
		}
	}
	return Event{Kind: EventWakeup, Source: src}
}
