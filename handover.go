package redisync

import (
	"context"
	"slices"
	"time"

	"github.com/go-redisync/redisync/internal/mutant"
	"github.com/go-redisync/redisync/internal/scripts"
)

// The Client's queue of waiting calls: the waiting Lock and LockContext
// calls of one Client on one lock (those of a handle's own owner: an
// explicit owner re-enters instead) wait in one first-come-first-served
// queue, whichever handle they come through. Only the first of them asks
// Redis; a newcomer, TryLock included, does not go ahead of them; and a
// Mutex release hands its hold to the first of them that can take it,
// within bounds, instead of releasing it in Redis. A hold handed over keeps
// its identity in Redis (the field, which no command of the releasing owner
// uses again) and its lease (see lease.Scheduler.Replace); locally it
// becomes a new term of the receiving call's owner, and the releasing
// handle's term ends as released.

// maxHandoffs and maxHandoffTime bound a run of handovers within the
// Client, after which the hold is released in Redis so that other processes
// get their chance. The time bound (sync.Mutex's starvation threshold) stops
// long critical sections; with short ones the count ends a run first, after
// a few hundred microseconds (a run of 16 gave a third of the throughput).
const maxHandoffs = 64

// maxHandoffTime is a variable only so that tests can lengthen it.
var maxHandoffTime = time.Millisecond

// A place is a waiting call's place in its Client's queue of its lock.
type place struct {
	p    *protocol
	ch   chan handed   // receives the hold handed to the caller; buffered
	poke chan struct{} // a wake-up passed on to the first of the queue; buffered
}

// A handed hold is a term on its way to the caller it was handed to, with
// the bounds of the run of handovers it belongs to.
type handed struct {
	t         *term
	streak    int
	fromRedis time.Time
}

// queueKey names the queue of p's lock: its sort and name, whatever the
// owner (a Mutex and a FencedMutex of one name share it).
func queueKey(p *protocol) holdKey { return holdKey{kind: p.key.kind, name: p.key.name} }

// queues reports whether the call a waits in its Client's queue of its
// lock: a waiting call of a handle's own owner on an exclusive lock that
// does not queue in Redis by itself (Mutex, FencedMutex, a write lock,
// MultiMutex), whose attempts all had a known outcome (a late copy of one
// could outlive a hold handed to it).
func (a *caller) queues() bool {
	return a.p.fifo && !a.single && (a.mode == waitFree || a.mode == waitHandoff) && !a.call.uncertain()
}

// takesHanded reports whether the call a may be handed a hold by another
// call of its Client: a waiting Lock or LockContext of a Mutex handle's own
// owner.
func (a *caller) takesHanded() bool { return a.p.handoff && a.mode == waitHandoff && !a.single }

// queue places the waiting call a at the end of its lock's queue.
func (c *Client) queue(a *caller) *place {
	w := &place{p: a.p, ch: make(chan handed, 1), poke: make(chan struct{}, 1)}
	k := queueKey(a.p)
	c.xmu.Lock()
	c.queues[k] = append(c.queues[k], w)
	c.xmu.Unlock()
	return w
}

// queuedBehind reports whether the call a (a first acquire) finds calls of
// this Client queued for its lock ahead of it: it then waits among them
// without asking Redis, where only the first of them asks. A single attempt
// (TryLock) fails then, as sync.Mutex's does while waiters starve; an
// explicit owner's call and a call queued in Redis by itself never wait so.
func (c *Client) queuedBehind(a *caller, tk *ticket) bool {
	if !a.p.fifo || tk != nil || a.mode != waitFree && a.mode != waitHandoff {
		return false
	}
	c.xmu.Lock()
	defer c.xmu.Unlock()
	q := c.queues[queueKey(a.p)]
	return len(q) > 0 && (a.single || q[0] != a.place)
}

// waiting returns how many calls of the Client wait in the queue of p's
// lock.
func (c *Client) waiting(p *protocol) int {
	c.xmu.Lock()
	defer c.xmu.Unlock()
	return len(c.queues[queueKey(p)])
}

// passWake passes a wake-up of the lock's channel that reached the waiting
// call a, queued behind another, on to the first of the queue, which asks
// Redis where a would not; it reports whether it did.
func (c *Client) passWake(a *caller) bool {
	if a.place == nil || !c.queuedBehind(a, nil) { // place is the waiting goroutine's own: no lock needed to read it
		return false
	}
	c.pokeFirst(a.p) // the first now, if another one took its place meanwhile: it asks Redis
	return true
}

// pokeFirst wakes the first of the Client's waiting calls of p's lock, if
// any, so that it asks Redis: a wake-up passed on by a call behind it, a
// release in Redis by a call of this Client, or one that handed the lock to
// a waiter of another process while the calls of this Client were not
// queued in Redis.
func (c *Client) pokeFirst(p *protocol) {
	c.xmu.Lock()
	defer c.xmu.Unlock()
	if q := c.queues[queueKey(p)]; len(q) > 0 {
		select {
		case q[0].poke <- struct{}{}:
		default:
		}
	}
}

// leave takes w out of its queue. When a hold was handed to w meanwhile, it
// gives it back; when w was first and its call failed, the next one asks
// Redis in its place.
func (c *Client) leave(ctx context.Context, w *place, failed bool) {
	k := queueKey(w.p)
	c.xmu.Lock()
	q := c.queues[k]
	i := slices.Index(q, w)
	if i >= 0 {
		c.dropWait(k, i)
		if next := c.queues[k]; i == 0 && failed && len(next) > 0 {
			select {
			case next[0].poke <- struct{}{}:
			default:
			}
		}
	}
	c.xmu.Unlock()
	if i < 0 {
		c.giveBack(ctx, w.p, <-w.ch) // sent before w left the queue
	}
}

// requeue moves w to the end of its queue and pokes the new first call of
// the queue, if w was first: w's call was refused for a rule of its own
// (WithSyncReplicas, when no replica acknowledged its acquisition, which was
// undone), and the others, who may not need that rule met, must not wait
// for it while it retries.
func (c *Client) requeue(w *place) {
	k := queueKey(w.p)
	c.xmu.Lock()
	defer c.xmu.Unlock()
	q := c.queues[k]
	i := slices.Index(q, w)
	if i < 0 || len(q) == 1 {
		return
	}
	q = append(slices.Delete(q, i, i+1), w)
	c.queues[k] = q
	if i == 0 {
		select {
		case q[0].poke <- struct{}{}:
		default:
		}
	}
}

// dropWait removes the i-th waiter of the queue k (c.xmu held).
func (c *Client) dropWait(k holdKey, i int) {
	q := c.queues[k]
	if len(q) == 1 {
		delete(c.queues, k)
		return
	}
	c.queues[k] = slices.Delete(q, i, i+1)
}

// transfer hands h's hold (h.op held, one hold left, not ended) to the
// longest-waiting call of this Client on the same lock that may take it
// (a Mutex call whose handle has the same lease, asking for no more
// replicas than the hold's acquisition had), the holder's own owner's
// included, when the bounds of a run of handovers allow; it reports whether
// it did. A hold one of whose acquire attempts had an unknown outcome is
// never handed on: a late copy of that attempt must find it released (see
// release.go).
func (c *Client) transfer(h *hold, p *protocol, t *term) bool {
	if h.count != 1 || !p.handoff || t.ambiguous || h.streak >= maxHandoffs || time.Since(h.fromRedis) >= maxHandoffTime {
		return false
	}
	k := queueKey(p)
	c.xmu.Lock()
	i := slices.IndexFunc(c.queues[k], func(w *place) bool {
		return w.p.handoff && w.p.cfg.lease == p.cfg.lease && w.p.cfg.leaseTTL() == p.cfg.leaseTTL() &&
			(w.p.cfg.syncReplicas == 0 || w.p.cfg.syncReplicas == t.synced)
	})
	if i < 0 {
		c.xmu.Unlock()
		return false
	}
	w := c.queues[k][i]
	next := newObservedTerm(w.p.cfg, w.p.primitive, w.p.name)
	next.field, next.synced = t.field, t.synced
	next.lease = w.p.newLease(next)
	if !c.leases.Replace(t.lease, next.lease) {
		c.xmu.Unlock() // lost, or past its deadline: the release finds out
		return false
	}
	if next.obs != nil {
		next.obs.since = time.Now()
	}
	c.dropWait(k, i)
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
	ok := !ended && h.count == 0 && !a.call.uncertain()
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

// giveBack releases in Redis the hold x, handed to a call of p that does
// not take it; the release wakes the lock's next waiter.
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
