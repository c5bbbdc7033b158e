package redisync

import "context"

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
