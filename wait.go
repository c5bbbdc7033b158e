package redisync

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/mutant"
	"github.com/go-redisync/redisync/internal/notify"
)

// An attempt is the outcome of one try to acquire.
type attempt struct {
	acquired bool
	// wait is how long the lock stays taken unless released (the holder's
	// remaining lease, or a queued waiter's deadline); negative if unknown.
	wait time.Duration
	// free, when set, is closed when the hold of the caller's own owner, who
	// does not re-enter, is released.
	free <-chan struct{}
	// reentered marks an acquisition joining the owner's current term, and
	// localHandoff one handed over by a release within the Client (no
	// Redis); complete an answer that the call's goal is reached without a
	// hold.
	reentered, localHandoff, complete bool
	// handed marks a hold a release handed to the call through Redis,
	// taken from the release's message (see takeHanded).
	handed  bool
	channel string // where to wait, if not the lock's channel (scripts.Reply)
	// place is a queued Mutex call's place number (scripts.Reply), which
	// names it in the message of a release that hands it the lock; mayQueue
	// says that the call, busy and not queued yet, may queue.
	place    int64
	mayQueue bool
}

// pollInterval bounds a wait when the holder's lease is unknown.
const pollInterval = time.Second

// transientBudget is how long LockContext rides out a run of transport
// failures (a killed connection, a reconnect) before it returns the error.
const transientBudget = time.Second

// acquire is the waiter loop of every primitive, for the call a, queued in
// Redis with tk when the lock queues its waiters (tk is nil otherwise). It
// tries; when the lock is taken it joins the lock's channel (confirmed before
// the next try, so a release in between is not missed) and waits for a
// wake-up, the bound the try gave (the holder's remaining lease, or the
// heartbeat deadline of the waiter ahead), a lapsed heartbeat, a handover from
// the owner's own release, or the end of ctx; then it tries again. A lost
// message costs at most one lease, never a hang.
//
// A verdict (see verdict) is returned at once. With forever set (Lock),
// failures are logged and retried with backoff; otherwise an error reply is
// returned at once and transport failures are retried for transientBudget.
// When ctx ends, acquire returns ctx.Err() unwrapped. It leaves no
// subscription and no heartbeat behind and, when it fails, no queue entry and
// no hold (see giveUp).
func (c *Client) acquire(ctx context.Context, a *caller, tk *ticket, forever bool) (err error) {
	l := &waitLoop{a: a, tk: tk, forever: forever}
	if a.p.cfg.observer != nil {
		a.p.observe(ctx, Event{Kind: EventAcquireAttempt})
		l.start = time.Now() // the call's start
	}
	defer func() { c.endWait(ctx, l, err) }()
	if tk == nil {
		c.queueEarly(l)
	}
	for {
		if c.isClosed() {
			return lockError(a.p.name, ErrClosed)
		}
		res, tryErr := c.try(ctx, a, l.tk)
		if ctx.Err() != nil && !res.acquired && !res.complete {
			return ctx.Err()
		}
		f, done, err := c.plan(ctx, l, res, tryErr)
		if done {
			return err
		}
		if done, err := c.await(ctx, l, f); done {
			return err
		}
	}
}

// A waitLoop is the state of one waiter loop.
type waitLoop struct {
	a       *caller
	tk      *ticket
	forever bool
	start   time.Time      // the call's start, taken only for an observer
	w       *notify.Waiter // the caller's place on the lock's channel
	joined  string         // w's channel
	timer   *time.Timer    // made on the first wait: most acquisitions need none
	tag     string         // w's tag
	// own records that the call acquired with its own field, in Redis (a
	// queued Mutex call then has no place left there).
	own bool
	// failures counts the failed attempts in a row, since firstFailure.
	failures     int
	firstFailure time.Time
}

// A waitFor is what one wait of the loop waits for, besides the timer.
type waitFor struct {
	wake, free <-chan struct{}
	src        WakeSource // what a wake-up means, 0 when the wait is no wait for the lock
}

// sleep sets l's timer to d.
func (l *waitLoop) sleep(d time.Duration) {
	if l.timer == nil {
		l.timer = time.NewTimer(d)
	} else {
		l.timer.Reset(d)
	}
}

// plan decides what an attempt's outcome means for the loop l: done with
// the call's result, or what to wait for before the next attempt.
func (c *Client) plan(ctx context.Context, l *waitLoop, res attempt, tryErr error) (f waitFor, done bool, err error) {
	p := l.a.p
	if tryErr == nil {
		l.failures = 0
	} else if l.failures == 0 {
		l.firstFailure = time.Now()
	}
	switch {
	case tryErr != nil && (verdict(tryErr) || !l.forever && (!ambiguous(tryErr) || time.Since(l.firstFailure) >= transientBudget)):
		return f, true, tryErr
	case tryErr != nil:
		l.failures++
		if l.a.place != nil && errors.Is(tryErr, ErrNotReplicated) {
			c.requeue(l.a.place) // Lock retries behind the Client's other waiting calls
		}
		// A refusal by the server (an ACL, a key of another type) is logged
		// at once: unlike a dropped connection it will not pass by itself.
		if l.forever && (l.failures == 3 || l.failures%100 == 0 || l.failures == 1 && !ambiguous(tryErr)) {
			p.cfg.logger.Warn("redisync: lock attempts failing; retrying", "name", p.name, "attempts", l.failures, "error", tryErr)
		}
		d := min(time.Duration(l.failures)*20*time.Millisecond, time.Second)
		l.sleep(d/2 + rand.N(d))
	case res.complete:
		p.observe(ctx, Event{Kind: EventCompleted, Wait: time.Since(l.start)})
		return f, true, nil
	case res.acquired:
		l.own = !res.localHandoff && !res.reentered
		p.observe(ctx, acquiredEvent(l.start, res)) // cheap without an observer: no start
		return f, true, nil
	case res.free != nil && !p.queued:
		f = waitFor{wake: res.free, src: WakeLocal}
		l.sleep(time.Hour)
	case l.w == nil || res.channel != "" && res.channel != l.joined:
		l.tag = ""
		if l.tk != nil {
			l.tag = cmp.Or(placeTag(res.place), l.tk.ID)
			p.observe(ctx, Event{Kind: EventQueued}) // the reply just placed tk in the queue
		}
		if l.w != nil {
			l.w.Leave(true) // a MultiMutex now waits for another name: a wake-up it had is passed on
		}
		l.joined = cmp.Or(res.channel, p.channel)
		l.w = c.notify.Join(l.joined, p.policy, l.tag)
		f = waitFor{wake: l.w.Ready(), free: res.free}
		l.sleep(l.bound(res.wait))
	default:
		if tag := placeTag(res.place); tag != "" && tag != l.tag {
			l.tag = tag
			l.w.Retag(tag)
		}
		f = waitFor{wake: l.w.Wake(), free: res.free, src: WakePubSub} // or another source: w knows
		l.sleep(l.bound(res.wait))
	}
	if l.a.place == nil && l.a.queues() {
		l.a.place = c.queue(l.a) // first come, first served among the Client's calls
	}
	if res.mayQueue && l.tk == nil && l.w != nil && !c.queuedBehind(l.a, nil) {
		// Busy in Redis: the call queues there with its next attempt, made
		// once w's subscription is confirmed (at once if it is). Calls of
		// the Client behind it wait for it to be served, not in Redis.
		l.tk = p.ticket(l.a)
		f = waitFor{wake: l.w.Ready(), free: res.free}
	}
	return f, false, nil
}

// endWait cleans up after the loop l returned err: nothing of a waiting
// call stays behind, and nothing of a failed one (see giveUp).
func (c *Client) endWait(ctx context.Context, l *waitLoop, err error) {
	p := l.a.p
	if l.timer != nil {
		l.timer.Stop()
	}
	if l.a.place != nil {
		c.leave(ctx, l.a.place, err != nil)
	}
	if l.tk != nil {
		l.tk.Stop()
	}
	if l.w != nil {
		// A queued waiter's turn is passed on by giveUp's script; a Mutex's
		// queue has no turns: a wake-up of Redisson's kind is passed on.
		l.w.Leave(err != nil && (l.tk == nil || p.waitQueue))
	}
	if err == nil && l.tk != nil && p.waitQueue && !l.own {
		c.giveUp(ctx, l.a, l.tk) // the hold came another way: the call's place and field are left
	}
	if err != nil {
		c.giveUp(ctx, l.a, l.tk)
		if l.a.left != nil {
			l.a.left(ctx) // a waiting writer's claim
		}
		p.observe(ctx, Event{Kind: EventAcquireFailed, Wait: time.Since(l.start), Cause: err})
	}
}

// await waits once for the loop l: it reports done with the call's result
// when the wait decides it (a handover, the end of ctx or of the Client),
// and false when the loop should try again.
func (c *Client) await(ctx context.Context, l *waitLoop, f waitFor) (done bool, err error) {
	p := l.a.p
	var lapsed chan struct{}
	if l.tk != nil {
		lapsed = l.tk.Lapsed
	}
	var transferred <-chan handed
	var poked <-chan struct{}
	if l.a.place != nil {
		transferred, poked = l.a.place.ch, l.a.place.poke
	}
	observe := p.cfg.observer != nil && f.src != 0
	select {
	case x := <-transferred:
		l.a.place = nil
		if c.adopt(ctx, l.a, x) {
			p.observe(ctx, acquiredEvent(l.start, attempt{acquired: true, localHandoff: true}))
			return true, nil
		}
	case <-f.wake:
		if observe {
			p.observe(ctx, wakeEvent(l.w, f.src, true))
		}
		if l.tk != nil && p.waitQueue && (l.w.Named() || mutant.On("hand-any")) && c.takeHanded(ctx, l) {
			l.own = true
			p.observe(ctx, acquiredEvent(l.start, attempt{acquired: true, handed: true}))
			return true, nil
		}
		if f.src == WakePubSub {
			c.passWake(l.a) // when queued behind another, that one asks Redis
		}
	case <-poked: // a wake-up passed on by a waiter queued behind
		if observe {
			p.observe(ctx, wakeEvent(nil, WakeLocal, true))
		}
	case <-f.free: // nil unless the owner's own hold blocks a queued turn
		p.observe(ctx, wakeEvent(l.w, WakeLocal, true))
	case <-l.timer.C:
		if observe {
			p.observe(ctx, wakeEvent(l.w, f.src, false))
		}
	case <-lapsed:
		l.tk.Ended() // the next try queues again and restarts it
	case <-ctx.Done():
		return true, ctx.Err()
	case <-c.closed:
		return true, lockError(p.name, ErrClosed)
	}
	return false, nil
}

// tryOnce makes the single attempt of a Try call and gives back what it may
// have left when its outcome is unknown.
func (c *Client) tryOnce(ctx context.Context, a *caller) (bool, error) {
	if c.isClosed() {
		return false, lockError(a.p.name, ErrClosed)
	}
	a.single = true
	res, err := c.try(ctx, a, nil)
	if res.acquired {
		a.p.observe(ctx, acquiredEvent(time.Time{}, res))
	}
	if err != nil && a.call.uncertain() {
		c.giveUp(ctx, a, nil)
	}
	if ctx.Err() != nil && !res.acquired {
		return false, ctx.Err()
	}
	return res.acquired, err
}

// bound is how long the loop l waits for a wake-up before trying again,
// after a try that found the lock taken for pttl. A queued Mutex call waits
// no longer than its heartbeat timeout: a release may hand the lock to a
// waiter ahead that died, which holds it until its heartbeat deadline and
// then lets it expire without a message.
func (l *waitLoop) bound(pttl time.Duration) time.Duration {
	d := waitBound(pttl)
	if l.tk != nil && l.a.p.waitQueue && !mutant.On("no-fallback") {
		d = min(d, l.a.p.cfg.heartbeat)
	}
	return d
}

// waitBound is how long to wait for a wake-up before trying again: until the
// holder's lease runs out (plus a millisecond, as PTTL rounds down).
func waitBound(pttl time.Duration) time.Duration {
	if mutant.On("no-fallback") {
		return time.Hour
	}
	if pttl < 0 {
		return pollInterval
	}
	return pttl + time.Millisecond
}

// waitMS converts a wait bound in milliseconds from a script (negative if
// unknown), bounded so that a deadline written outside redisync cannot
// overflow.
func waitMS(ms int64) time.Duration {
	return time.Duration(min(max(ms, -1), int64(time.Hour/time.Millisecond))) * time.Millisecond
}

// lastWaiter numbers the waiting calls of the process.
var lastWaiter atomic.Uint64

// A ticket is a waiting call's place in a queue in Redis, kept by a heartbeat.
type ticket = lease.Heartbeat

// newTicket returns a ticket for a queue whose heartbeat and queue keys are
// alive and queue. The id is unique across Clients: "<client-uuid>:w<n>".
func (c *Client) newTicket(alive, queue string, cfg *config) *ticket {
	return c.leases.NewHeartbeat(c.id+":w"+strconv.FormatUint(lastWaiter.Add(1), 10), alive, queue, cfg.heartbeat)
}
