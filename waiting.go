package redisync

import (
	"context"
	"time"
)

// How a waiting call waits between its attempts: its way, chosen by its
// protocol's policies. Every way waits on the lock's channel and on the
// call's local channel (the call's channelWait, wait.go); beyond that a call
// waits in its Client's line of the lock, where only the first asks Redis
// and a release of the Client may hand it the hold (inLine, which keeps the
// call's place in the line); a Mutex's first in line also queues in Redis,
// where a release hands it the lock inside its script (throughRedis, which
// also keeps the call's queueing there); a FairMutex's and a Semaphore's
// calls queue in Redis with a ticket, whose turn is Redis' (withTicket,
// which keeps the ticket's queueing). Each way is in a file of its own
// (waiting_channel.go, waiting_line.go, waiting_redis.go,
// waiting_ticket.go); the wait loop takes one per call (newWay, wait.go),
// and calls its three steps: plan after an attempt that did not end the
// call, woke after a wake-up on the lock's channel, leave when the call
// returns. The layers below the ways reach where the call waits through
// the waiting interface (protocol.go).

// A waitFor is what one wait of the loop waits for on the lock's channel,
// besides the call's local channel, and for how long at most.
type waitFor struct {
	wake  <-chan struct{}
	src   WakeSource // what a wake-up means, 0 when the wait is no wait for the lock
	bound time.Duration
}

// A way is how a waiting call waits between its attempts, and keeps where
// it waits (a waiting: the layers below ask it).
type way interface {
	waiting
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
