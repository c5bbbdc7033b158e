package redisync

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/notify"
	"github.com/go-redisync/redisync/internal/scripts"
)

// A protocol is one sort of hold on one lock, for one owner: how the engine
// takes it in Redis, leaves it, renews it and wakes its waiters. Each
// primitive describes its holds this way (its file holds its protocol next to
// its API); the engine — the hold table, the waiting loop, the release and
// undo paths, the local handover — is shared.
type protocol struct {
	key  holdKey
	name string // the lock's name, for errors, logs and events
	cfg  *config
	// primitive names the lock's sort in events (Event.Primitive).
	primitive Primitive
	// channel is where waiters of the lock wait, policy how its messages
	// wake them.
	channel string
	policy  notify.Policy
	// wakeAll makes a release wake every waiter of this process, not one.
	wakeAll bool
	// suffix ends the fields of new holds (a write hold's ":write").
	suffix string
	// handoff lets a release hand the hold straight to a local caller of the
	// same owner (see handOver). Never for a hold whose every acquisition
	// Redis must see (a FencedMutex's token) or whose order it keeps.
	handoff bool
	// queued marks a lock whose waiters queue in Redis with a ticket
	// (FairMutex, Semaphore): a release names the waiters it wakes.
	queued bool
	// permits marks a Semaphore: holds are permits, a new acquire after a
	// loss starts a new hold (the lost permits wait for Release).
	permits bool

	// cur is the handle's latest term, for its Done and Err.
	cur *atomic.Pointer[term]

	acquire  func(ctx context.Context, a acquisition) (scripts.Reply, error)
	release  func(ctx context.Context, r release) (scripts.Released, error)
	newLease func(t *term) *lease.Lease
}

// An acquisition is one acquire script call.
type acquisition struct {
	h     *hold  // the owner's record (its op held)
	field string // the hold's identity
	count int    // holds (permits) before: 0 for a first acquire
	n     int    // holds (permits) to add
	tk    *ticket
	// queueOnly asks to queue (or keep the place) and never take: the
	// owner holds the lock through another call.
	queueOnly bool
}

// hold returns what an acquire script is asked for a, under a lease of
// leaseMS milliseconds.
func (a *acquisition) hold(leaseMS string) scripts.Hold {
	h := scripts.Hold{Field: a.field, Count: a.count, LeaseMS: leaseMS}
	if a.tk != nil {
		h.Waiter, h.HeartbeatMS = a.tk.ID, a.tk.TimeoutMS
	}
	return h
}

// A release is one release script call for the hold record h (nil for a
// call that gave up, which has no record).
type release struct {
	h *hold
	scripts.Release
}

// Release retries and latches. A release whose reply is lost is sent again
// for up to releaseBudget; the final release of a hold leaves a latch named by
// the hold's identity, which outlives that window so that the repeat still
// finds it and answers as the first attempt did.
//
// A hold one of whose acquire attempts had an unknown outcome, and the undo of
// a call that gave up after one, leave the latch for tombstoneTTL instead: a
// copy of that attempt may still be on its way (rueidis writes a command whose
// caller gave up, and a stalled connection delivers it late), and the latch
// makes it take nothing. A copy later than that can take a lock for nobody,
// which then expires with its lease.
const (
	releaseBudget = 3 * time.Second
	latchTTL      = "5000"  // milliseconds
	tombstoneTTL  = "60000" // milliseconds
	cleanupBudget = 2 * time.Second
)
