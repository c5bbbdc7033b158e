package redisync

import "context"

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
