package redisync

import (
	"context"
	"time"
)

// How a waiting call waits between its attempts: its way, chosen by its
// protocol's policies. Every way waits on the lock's channel and on the
// call's local channel (wait.go); beyond that a call waits in its Client's
// line of the lock, where only the first asks Redis and a release of the
// Client may hand it the hold (inLine); a Mutex's first in line also queues
// in Redis, where a release hands it the lock inside its script
// (throughRedis); a FairMutex's and a Semaphore's calls queue in Redis with
// a ticket, whose turn is Redis' (withTicket). The wait loop calls a way's
// three steps: plan after an attempt that did not end the call, woke after
// a wake-up on the lock's channel, leave when the call returns.

// A waitFor is what one wait of the loop waits for on the lock's channel,
// besides the call's local channel, and for how long at most.
type waitFor struct {
	wake  <-chan struct{}
	src   WakeSource // what a wake-up means, 0 when the wait is no wait for the lock
	bound time.Duration
}

// A way is how a waiting call waits between its attempts.
type way interface {
	// plan places the call a, whose attempt did not end the call (res: it
	// found the lock taken, or failed and is to back off for f.bound), where
	// the way has it wait, and returns f, what a waits for on the lock's
	// channel and how long at most, or what replaces it.
	plan(e *engine, a *call, res attempt, f waitFor) waitFor
	// woke handles a wake-up of a on the lock's channel from src and
	// reports whether a holds the lock now.
	woke(ctx context.Context, e *engine, a *call, src WakeSource) bool
	// leave takes a out of where the way had it wait, as it returns err.
	leave(ctx context.Context, e *engine, a *call, err error)
}

// wayOf returns the way of p's waiting calls.
func wayOf(p *protocol) way {
	switch {
	case p.wait == waitWithTicket:
		return withTicket{}
	case p.wait == waitOnChannel:
		return onChannel{}
	case p.handover == handoverThroughRedis:
		return throughRedis{}
	}
	return inLine{}
}

// onChannel waits on the lock's channel alone: a read lock, a Once, a
// WaitGroup.
type onChannel struct{}

func (onChannel) plan(_ *engine, _ *call, _ attempt, f waitFor) waitFor { return f }

func (onChannel) woke(context.Context, *engine, *call, WakeSource) bool { return false }

func (onChannel) leave(_ context.Context, _ *engine, a *call, err error) {
	if a.ch.w != nil {
		a.ch.w.Leave(err != nil) // a wake-up it may have swallowed is passed on
	}
}

// inLine also waits in the Client's line of the lock, first come first
// served: a Mutex's calls whose holds are handed within the Client only, a
// FencedMutex's, a MultiMutex's, a write lock's.
type inLine struct{}

func (inLine) plan(e *engine, a *call, _ attempt, f waitFor) waitFor {
	if a.place == nil && a.queues() {
		a.place = e.handovers.queue(a)
	}
	return f
}

func (inLine) woke(_ context.Context, e *engine, a *call, src WakeSource) bool {
	if src == WakePubSub {
		e.handovers.passWake(a) // when queued behind another, that one asks Redis
	}
	return false
}

func (inLine) leave(ctx context.Context, e *engine, a *call, err error) {
	if a.place != nil {
		e.leave(ctx, a.place, err)
	}
	onChannel{}.leave(ctx, e, a, err)
}

// throughRedis is a Mutex's way: in line, and the first in line queues in
// Redis too, where a release hands it the lock inside its script and
// publishes its place (see receive.go).
type throughRedis struct{}

func (throughRedis) plan(e *engine, a *call, res attempt, f waitFor) waitFor {
	f = inLine{}.plan(e, a, res, f)
	if a.inRedis.tk != nil && !mutantNoFallback {
		// Queued: a release may hand the lock over to a waiter ahead that
		// died, which holds it until its heartbeat deadline and then lets
		// it expire without a message.
		f.bound = min(f.bound, a.p.cfg.heartbeat)
	}
	if res.mayQueue && a.inRedis.tk == nil && a.ch.w != nil {
		// Busy in Redis: the call queues there with its next attempt, made
		// once w's subscription is confirmed (at once if it is). Calls of
		// the Client behind it wait for it to be served, not in Redis.
		if !e.handovers.queuedBehind(a, nil) {
			a.inRedis.tk = a.p.ticket(a)
			f.wake, f.src = a.ch.w.Ready(), 0
		}
	}
	return f
}

func (throughRedis) woke(ctx context.Context, e *engine, a *call, src WakeSource) bool {
	if a.inRedis.tk != nil && (a.ch.w.Named() || mutantHandAny) {
		// A message naming its place: the lock is this call's.
		if e.takeHandover(ctx, a) && e.current(a) {
			a.inRedis.own = true
			a.p.observe(ctx, acquiredEvent(a.start, attempt{acquired: true, handed: true}))
			return true
		}
	}
	return inLine{}.woke(ctx, e, a, src)
}

func (throughRedis) leave(ctx context.Context, e *engine, a *call, err error) {
	if a.place != nil {
		e.leave(ctx, a.place, err)
	}
	if a.inRedis.tk == nil {
		onChannel{}.leave(ctx, e, a, err)
		return
	}
	a.inRedis.tk.Stop()
	onChannel{}.leave(ctx, e, a, err) // a Mutex's queue has no turns: a wake-up of Redisson's kind is passed on
	if err == nil && !a.inRedis.own {
		e.leaveQueue(ctx, a) // the hold came another way: the call's place and field are left
	}
}

// withTicket waits in the lock's queue in Redis with a ticket kept by a
// heartbeat: a FairMutex's calls, a Semaphore's. A release names the
// waiters it wakes.
type withTicket struct{}

func (withTicket) plan(_ *engine, _ *call, _ attempt, f waitFor) waitFor { return f }

func (withTicket) woke(context.Context, *engine, *call, WakeSource) bool { return false }

func (withTicket) leave(ctx context.Context, e *engine, a *call, err error) {
	if a.inRedis.tk == nil {
		onChannel{}.leave(ctx, e, a, err)
		return
	}
	a.inRedis.tk.Stop()
	if a.ch.w != nil {
		a.ch.w.Leave(false) // its turn is passed on by giveUp's script
	}
}
