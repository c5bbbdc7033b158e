package redisync

import (
	"slices"
	"sync"
	"time"

	"github.com/go-redisync/redisync/internal/lease"
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

// maxHandovers and maxHandoverTime bound a run of handovers within the
// Client, after which the hold is released in Redis so that other processes
// get their chance. The time bound (sync.Mutex's starvation threshold) stops
// long critical sections; with short ones the count ends a run first, after
// a few hundred microseconds (a run of 16 gave a third of the throughput).
const maxHandovers = 64

// maxHandoverTime is a variable only so that tests can lengthen it.
var maxHandoverTime = time.Millisecond

// The handovers of a Client: its queues of waiting calls, by lock, each in
// arrival order, and the holds handed to a waiting call and not yet taken,
// with the record they are for. Its mutex is taken before the hold table's
// when both are.
type handovers struct {
	mu      sync.Mutex
	queues  map[holdKey][]*place
	handing map[*term]holdKey
}

// newHandovers returns empty queues.
func newHandovers() handovers {
	return handovers{queues: make(map[holdKey][]*place), handing: make(map[*term]holdKey)}
}

// queue places the waiting call a at the end of its lock's queue.
func (hs *handovers) queue(a *call) *place {
	w := &place{p: a.p, ch: a.ch.localChan()}
	k := queueKey(a.p)
	hs.mu.Lock()
	hs.queues[k] = append(hs.queues[k], w)
	hs.mu.Unlock()
	return w
}

// queuedBehind reports whether the call a (a first acquire) finds calls of
// this Client queued for its lock ahead of it: it then waits among them
// without asking Redis, where only the first of them asks. A single attempt
// (TryLock) fails then, as sync.Mutex's does while waiters starve; an
// explicit owner's call and a call queued in Redis by itself never wait so.
func (hs *handovers) queuedBehind(a *call, tk *ticket) bool {
	if a.p.wait != waitInLine || tk != nil || !a.waitsForHold() {
		return false
	}
	hs.mu.Lock()
	defer hs.mu.Unlock()
	q := hs.queues[queueKey(a.p)]
	return len(q) > 0 && (a.single || q[0] != a.placeInLine())
}

// waiting returns how many calls of the Client wait in the queue of p's
// lock.
func (hs *handovers) waiting(p *protocol) int {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return len(hs.queues[queueKey(p)])
}

// passWake passes a wake-up of the lock's channel that reached the waiting
// call a, queued behind another, on to the first of the queue, which asks
// Redis where a would not; it reports whether it did.
func (hs *handovers) passWake(a *call) bool {
	if a.placeInLine() == nil || !hs.queuedBehind(a, nil) { // the place is the waiting goroutine's own: no lock needed to read it
		return false
	}
	hs.pokeFirst(a.p) // the first now, if another one took its place meanwhile: it asks Redis
	return true
}

// pokeFirst wakes the first of the Client's waiting calls of p's lock, if
// any, so that it asks Redis: a wake-up passed on by a call behind it, a
// release in Redis by a call of this Client, or one that handed the lock to
// a waiter of another process while the calls of this Client were not
// queued in Redis.
func (hs *handovers) pokeFirst(p *protocol) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.poke(queueKey(p))
}

// poke wakes the first call of the queue k, if any (hs.mu held).
func (hs *handovers) poke(k holdKey) {
	if q := hs.queues[k]; len(q) > 0 {
		wake(q[0].ch)
	}
}

// remove takes w out of its queue and reports whether it was there; if not,
// a hold was handed to it, which is on w.ch. When w was first and its call
// failed (callErr), the next one asks Redis in its place.
func (hs *handovers) remove(w *place, callErr error) bool {
	k := queueKey(w.p)
	hs.mu.Lock()
	defer hs.mu.Unlock()
	i := slices.Index(hs.queues[k], w)
	if i < 0 {
		return false
	}
	hs.drop(k, i)
	if i == 0 && callErr != nil {
		hs.poke(k)
	}
	return true
}

// requeue moves w to the end of its queue and pokes the new first call of
// the queue, if w was first: w's call was refused for a rule of its own
// (WithSyncReplicas, when no replica acknowledged its acquisition, which was
// undone), and the others, who may not need that rule met, must not wait
// for it while it retries.
func (hs *handovers) requeue(w *place) {
	k := queueKey(w.p)
	hs.mu.Lock()
	defer hs.mu.Unlock()
	q := hs.queues[k]
	i := slices.Index(q, w)
	if i < 0 || len(q) == 1 {
		return
	}
	hs.queues[k] = append(slices.Delete(q, i, i+1), w)
	if i == 0 {
		hs.poke(k)
	}
}

// drop removes the i-th waiter of the queue k (hs.mu held).
func (hs *handovers) drop(k holdKey, i int) {
	q := hs.queues[k]
	if len(q) == 1 {
		delete(hs.queues, k)
		return
	}
	hs.queues[k] = slices.Delete(q, i, i+1)
}

// handOver hands term t of h (one hold left, not ended) to the longest-waiting
// call of its queue that may take it (a Mutex call whose handle has the same
// lease, asking for no more replicas than the hold's acquisition had), as
// a new term whose lease replace puts in the place of t's, and reports
// whether it did. The handed term stays in handing until its receiver takes
// it or gives it back.
func (hs *handovers) handOver(h *hold, p *protocol, t *term, replace func(old, next *lease.Lease) bool) bool {
	k := queueKey(p)
	hs.mu.Lock()
	defer hs.mu.Unlock()
	i := slices.IndexFunc(hs.queues[k], func(w *place) bool {
		return w.p.handover != noHandover && sameLease(w.p, p) && w.p.syncedEnough(t)
	})
	if i < 0 {
		return false
	}
	w := hs.queues[k][i]
	next := newObservedTerm(w.p.cfg, w.p.primitive, w.p.name)
	next.field, next.latchKey, next.synced, next.queued = t.field, t.latchKey, t.synced, t.queued
	next.lease = w.p.newLease(next)
	if !replace(t.lease, next.lease) {
		return false // lost, or past its deadline: the release finds out
	}
	if next.obs != nil {
		next.obs.since = time.Now()
	}
	hs.drop(k, i)
	hs.handing[next] = w.p.key
	hand(w.ch, handover{t: next, streak: h.streak + 1, fromRedis: h.fromRedis})
	return true
}

// taken records that the handed term t reached its receiver, which takes
// it (take, called with hs.mu held, makes it the receiver's) or gives it
// back.
func (hs *handovers) taken(t *term, take func()) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	delete(hs.handing, t)
	if take != nil {
		take()
	}
}

// terms calls each with every handed term not yet taken (hs.mu held).
func (hs *handovers) terms(each func(holdKey, *term)) {
	for t, key := range hs.handing {
		each(key, t)
	}
}

// sameLease reports whether a hold of p keeps the lease a hold of w would
// have: a handover passes the lease on as it is.
func sameLease(w, p *protocol) bool {
	return w.cfg.lease == p.cfg.lease && w.cfg.leaseTTL() == p.cfg.leaseTTL()
}

// syncedEnough reports whether the term t was acknowledged by as many
// replicas as a hold of p asks for (WithSyncReplicas).
func (p *protocol) syncedEnough(t *term) bool {
	return p.cfg.syncReplicas == 0 || p.cfg.syncReplicas == t.synced
}
