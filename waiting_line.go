package redisync

import "context"

// inLine also waits in the Client's line of the lock, first come first
// served: a Mutex's calls whose holds are handed within the Client only, a
// FencedMutex's, a MultiMutex's, a write lock's. place is the call's place
// in the line, while it waits there.
type inLine struct {
	place *place
}

func (w *inLine) line() *place { return w.place }

func (w *inLine) leftLine() { w.place = nil }

func (w *inLine) queue() *redisQueueing { return nil }

func (w *inLine) plan(e *engine, a *call, _ attempt, f waitFor) waitFor {
	if w.place == nil && a.queues() {
		w.place = e.handovers.queue(a)
	}
	return f
}

func (w *inLine) woke(_ context.Context, e *engine, a *call, src WakeSource) bool {
	if src == WakePubSub {
		e.handovers.passWake(a) // when queued behind another, that one asks Redis
	}
	return false
}

func (w *inLine) leave(ctx context.Context, e *engine, a *call, err error) {
	if w.place != nil {
		e.leave(ctx, w.place, err)
	}
	onChannel{}.leave(ctx, e, a, err)
}
