package redisync

import "context"

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
