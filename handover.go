package redisync

import (
	"context"
	"time"
)

// The local handover layer: goroutines that share a Mutex handle (one owner)
// pass its hold to each other without Redis, within bounds.

// maxHandoffs and maxHandoffTime bound a run of handovers between local
// callers of one owner, after which the hold is released in Redis so that
// other processes get their chance. The time bound (sync.Mutex's starvation
// threshold) stops long critical sections; with short ones the count ends a
// run first, after a few hundred microseconds (a run of 16 gave a third of
// the throughput).
const maxHandoffs = 64

// maxHandoffTime is a variable only so that tests can lengthen it.
var maxHandoffTime = time.Millisecond

// A handoffWait is a caller's place in its owner's handover queue.
type handoffWait struct {
	h  *hold
	p  *protocol
	ch chan struct{} // receives when the hold is handed to the caller
}

// handOver passes h's hold (h.op held, one hold left, not ended) straight to
// a local caller of the same owner, or parks it for one on its way, instead
// of releasing it in Redis, when the bounds allow and the lease's deadline
// has not passed (after a pause the hold may be gone from Redis, which the
// release finds out); it reports whether it did.
func (c *Client) handOver(h *hold, p *protocol, t *term) bool {
	if h.count != 1 || !p.handoff || h.streak >= maxHandoffs || time.Since(h.fromRedis) >= maxHandoffTime ||
		!c.leases.Current(t.lease) {
		return false
	}
	switch {
	case len(h.handoff) > 0:
		// A local caller of the owner waits for this very hold: hand it over.
		ch := h.handoff[0]
		h.handoff = h.handoff[1:]
		h.streak++
		if t.obs != nil {
			t.observeHandoff()
		}
		ch <- struct{}{} // buffered: never blocks
		return true
	case h.arriving.Load() > 0:
		// One is on its way to the queue, blocked on h.op: releasing in
		// Redis now would make it (and all the others) acquire there
		// again. Leave the hold for it to take.
		h.parked = true
		h.streak++
		if t.obs != nil {
			t.observeHandoff()
		}
		return true
	}
	return false
}

// unpark takes the parked hold of h (h.op held) for the caller and returns
// its term. When the hold ended meanwhile (lost, Close, ForceUnlock), nobody
// holds it to acknowledge that with a release: unpark does, clears h and
// reports false, and the caller acquires in Redis.
func (c *Client) unpark(h *hold) (*term, bool) {
	h.parked = false
	t := h.term.Load()
	if ended, _ := t.result(); ended {
		c.finish(h)
		return nil, false
	}
	return t, true
}

// abandonHandoff takes a caller that gives up out of its owner's handover
// queue, releasing the hold if it was handed to it meanwhile.
func (c *Client) abandonHandoff(ctx context.Context, hw *handoffWait) {
	_ = hw.h.op.Lock(context.Background())
	for i, ch := range hw.h.handoff {
		if ch == hw.ch {
			hw.h.handoff = append(hw.h.handoff[:i:i], hw.h.handoff[i+1:]...)
			hw.h.op.Unlock()
			return
		}
	}
	hw.h.op.Unlock()
	select {
	case <-hw.ch:
		if err := c.releaseHold(context.WithoutCancel(ctx), hw.p, 1); err != nil {
			hw.p.cfg.logger.Warn("redisync: a hold handed to a caller that gave up could not be released; it expires with its lease",
				"name", hw.p.name, "error", err)
		}
	default:
	}
}
