package redisync

import (
	"context"
	"slices"
	"time"

	"github.com/go-redisync/redisync/internal/mutant"
	"github.com/go-redisync/redisync/internal/scripts"
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

// Handing a hold between handles: a Mutex released by one handle while a
// handle of another owner of the same Client waits for the same lock passes
// its hold in Redis to that waiter instead of releasing it, within the same
// bounds as above. The hold keeps its identity in Redis (the field, which
// no command of the releasing owner uses again) and its lease (see
// lease.Scheduler.Replace); locally it becomes a new term of the receiving
// owner, and the releasing handle's term ends as released.

// A transferWait is a waiting call's place in its Client's queue of callers
// that a hold of another owner may be handed to.
type transferWait struct {
	p    *protocol
	ch   chan handed   // receives the hold handed to the caller; buffered
	poke chan struct{} // a wake-up passed on by a waiter behind; buffered
}

// A handed hold is a term on its way to the caller it was handed to, with
// the bounds of the run of handovers it belongs to.
type handed struct {
	t         *term
	streak    int
	fromRedis time.Time
}

// queueTransfer places a waiting call of p in the queue of its lock.
func (c *Client) queueTransfer(p *protocol) *transferWait {
	w := &transferWait{p: p, ch: make(chan handed, 1), poke: make(chan struct{}, 1)}
	c.xmu.Lock()
	c.transfers[p.key.name] = append(c.transfers[p.key.name], w)
	c.xmu.Unlock()
	return w
}

// takesHanded reports whether the call a may be handed a hold by another
// handle of its Client: a waiting Lock or LockContext of a Mutex handle's
// own owner.
func (a *caller) takesHanded() bool { return a.p.handoff && a.mode == waitHandoff && !a.single }

// queuedBehind reports whether the waiting call a (a first acquire) finds
// other calls of this Client queued for a handed hold of its lock ahead of
// it: it then waits among them without asking Redis, where only the first
// of them waits. A call that does not take handed holds never does.
func (c *Client) queuedBehind(a *caller, tk *ticket) bool {
	if !a.takesHanded() || tk != nil {
		return false
	}
	c.xmu.Lock()
	defer c.xmu.Unlock()
	q := c.transfers[a.p.key.name]
	return len(q) > 0 && q[0] != a.xfer
}

// passWake passes a wake-up of the lock's channel that reached the waiting
// call a, queued behind another, on to the first of the queue, which asks
// Redis where a would not; it reports whether it did.
func (c *Client) passWake(a *caller) bool {
	if a.xfer == nil || !c.queuedBehind(a, nil) { // xfer is the waiting goroutine's own: no lock needed to read it
		return false
	}
	c.pokeFirst(a.p) // the first now, if another one took its place meanwhile: it asks Redis
	return true
}

// leaveTransfer takes w out of its queue. When a hold was handed to w
// meanwhile, it gives it back in Redis.
func (c *Client) leaveTransfer(ctx context.Context, w *transferWait) {
	c.xmu.Lock()
	q := c.transfers[w.p.key.name]
	i := slices.Index(q, w)
	if i >= 0 {
		c.dropWait(w.p.key.name, i)
	}
	c.xmu.Unlock()
	if i < 0 {
		c.giveBack(ctx, w.p, <-w.ch) // sent before w left the queue
	}
}

// dropWait removes the i-th waiter of name's queue (c.xmu held).
func (c *Client) dropWait(name string, i int) {
	q := c.transfers[name]
	if len(q) == 1 {
		delete(c.transfers, name)
		return
	}
	c.transfers[name] = slices.Delete(q, i, i+1)
}

// transfer hands h's hold (h.op held, one hold left, not ended) to the
// longest-waiting caller of another owner of this Client on the same lock,
// whose handle has the same lease, when the bounds of a run of handovers
// allow; it reports whether it did. A hold one of whose acquire attempts had
// an unknown outcome is never handed on: a late copy of that attempt must
// find it released (see release.go).
func (c *Client) transfer(h *hold, p *protocol, t *term) bool {
	if h.count != 1 || !p.handoff || t.ambiguous || h.streak >= maxHandoffs || time.Since(h.fromRedis) >= maxHandoffTime {
		return false
	}
	c.xmu.Lock()
	i := slices.IndexFunc(c.transfers[p.key.name], func(w *transferWait) bool {
		return w.p.key.owner != p.key.owner && w.p.cfg.lease == p.cfg.lease && w.p.cfg.leaseTTL() == p.cfg.leaseTTL()
	})
	if i < 0 {
		c.xmu.Unlock()
		return false
	}
	w := c.transfers[p.key.name][i]
	next := newObservedTerm(w.p.cfg, w.p.primitive, w.p.name)
	next.field = t.field
	next.lease = w.p.newLease(next)
	if !c.leases.Replace(t.lease, next.lease) {
		c.xmu.Unlock() // lost, or past its deadline: the release finds out
		return false
	}
	if next.obs != nil {
		next.obs.since = time.Now()
	}
	c.dropWait(p.key.name, i)
	c.handing[next] = w.p.key
	w.ch <- handed{t: next, streak: h.streak + 1, fromRedis: h.fromRedis}
	c.xmu.Unlock()
	if mutant.On("handover-release") {
		_, _ = p.release(context.Background(), release{Release: scripts.Release{Field: t.field, From: 1, Latch: latchTTL}})
	}
	t.end(nil)
	c.finish(h)
	return true
}

// adopt makes the hold x, handed to the waiting call a, a's own (a's owner
// holds nothing), and reports whether it did. It does not when x ended on
// its way (lost, Close, ForceUnlock) or when a cannot take it (its owner
// holds meanwhile, or an attempt of the call had an unknown outcome, whose
// late copy could outlive the hold); a hold it cannot take is given back.
func (c *Client) adopt(ctx context.Context, a *caller, x handed) bool {
	p := a.p
	h := c.ref(p.key, true)
	defer c.unref(h)
	if h.op.Lock(ctx) != nil {
		c.giveBack(ctx, p, x)
		return false
	}
	c.xmu.Lock()
	delete(c.handing, x.t)
	ended, _ := x.t.result()
	ok := !ended && h.count == 0 && !h.parked && !a.call.uncertain()
	if ok {
		h.setCount(1)
		h.streak, h.fromRedis = x.streak, x.fromRedis
		h.term.Store(x.t)
		c.mu.Lock()
		h.refs++ // the hold itself keeps the record
		c.mu.Unlock()
	}
	c.xmu.Unlock()
	h.op.Unlock()
	switch {
	case ok:
		a.term = x.t
		p.cur.Store(x.t)
		if c.isClosed() {
			x.t.end(lockError(p.name, ErrClosed))
		}
	case !ended:
		c.giveBack(ctx, p, x)
	}
	return ok
}

// giveBack releases in Redis the hold x, handed to a call of p that does not
// take it.
func (c *Client) giveBack(ctx context.Context, p *protocol, x handed) {
	c.xmu.Lock()
	delete(c.handing, x.t)
	c.xmu.Unlock()
	if !c.leases.Remove(x.t.lease) {
		x.t.lost(ErrLeaseExpired)
	}
	r := release{Release: scripts.Release{Field: x.t.field, From: 1, To: 0, Latch: latchTTL}}
	_ = c.settle(context.WithoutCancel(ctx), p, x.t, r, true)
}
