package redisync

import "context"

// onChannel waits on the lock's channel alone: a read lock, a Once, a
// WaitGroup. It keeps nothing of its own.
type onChannel struct{}

func (onChannel) line() *place { return nil }

func (onChannel) leftLine() {}

func (onChannel) queue() *redisQueueing { return nil }

func (onChannel) plan(_ *engine, _ *call, _ attempt, f waitFor) waitFor { return f }

func (onChannel) woke(context.Context, *engine, *call, WakeSource) bool { return false }

func (onChannel) leave(_ context.Context, _ *engine, a *call, err error) {
	if a.ch.w != nil {
		a.ch.w.Leave(err != nil) // a wake-up it may have swallowed is passed on
	}
}
