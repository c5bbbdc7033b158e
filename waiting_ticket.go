package redisync

import "context"

// withTicket waits in the lock's queue in Redis with a ticket kept by a
// heartbeat: a FairMutex's calls, a Semaphore's. A release names the
// waiters it wakes. redis is the call's queueing there.
type withTicket struct {
	redis redisQueueing
}

func (w *withTicket) line() *place { return nil }

func (w *withTicket) leftLine() {}

func (w *withTicket) queue() *redisQueueing { return &w.redis }

func (w *withTicket) plan(_ *engine, _ *call, _ attempt, f waitFor) waitFor { return f }

func (w *withTicket) woke(context.Context, *engine, *call, WakeSource) bool { return false }

func (w *withTicket) leave(ctx context.Context, e *engine, a *call, err error) {
	if w.redis.tk == nil {
		onChannel{}.leave(ctx, e, a, err)
		return
	}
	w.redis.tk.Stop()
	if a.ch.w != nil {
		a.ch.w.Leave(false) // its turn is passed on by giveUp's script
	}
}
