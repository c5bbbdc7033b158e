package redisync

import "context"

// throughRedis is a Mutex's way: in line, and the first in line queues in
// Redis too, where a release hands it the lock inside its script and
// publishes its place (see receive.go). redis is the call's queueing there.
type throughRedis struct {
	inLine
	redis redisQueueing
}

func (w *throughRedis) queue() *redisQueueing { return &w.redis }

func (w *throughRedis) plan(e *engine, a *call, res attempt, f waitFor) waitFor {
	f = w.inLine.plan(e, a, res, f)
	if w.redis.tk != nil && !mutantNoFallback {
		// Queued: a release may hand the lock over to a waiter ahead that
		// died, which holds it until its heartbeat deadline and then lets
		// it expire without a message.
		f.bound = min(f.bound, a.p.cfg.heartbeat)
	}
	if res.mayQueue && w.redis.tk == nil && a.ch.w != nil {
		// Busy in Redis: the call queues there with its next attempt, made
		// once w's subscription is confirmed (at once if it is). Calls of
		// the Client behind it wait for it to be served, not in Redis.
		if !e.handovers.queuedBehind(a, nil) {
			w.redis.tk = a.p.ticket(a)
			f.wake, f.src = a.ch.w.Ready(), 0
		}
	}
	return f
}

func (w *throughRedis) woke(ctx context.Context, e *engine, a *call, src WakeSource) bool {
	if w.redis.tk != nil && (a.ch.w.Named() || mutantHandAny) {
		// A message naming its place: the lock is this call's.
		if e.takeHandover(ctx, a) && e.current(a) {
			w.redis.own = true
			a.p.observe(ctx, acquiredEvent(a.start, attempt{acquired: true, handed: true}))
			return true
		}
	}
	return w.inLine.woke(ctx, e, a, src)
}

func (w *throughRedis) leave(ctx context.Context, e *engine, a *call, err error) {
	if w.place != nil {
		e.leave(ctx, w.place, err)
	}
	if w.redis.tk == nil {
		onChannel{}.leave(ctx, e, a, err)
		return
	}
	w.redis.tk.Stop()
	onChannel{}.leave(ctx, e, a, err) // a Mutex's queue has no turns: a wake-up of Redisson's kind is passed on
	if err == nil && !w.redis.own {
		e.leaveQueue(ctx, a) // the hold came another way: the call's place and field are left
	}
}
