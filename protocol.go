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
// (the hold table, the waiting loop, the release and undo paths, the local
// handover) takes it in Redis, leaves it, renews it and wakes its waiters.
// Each primitive's file holds its protocol next to its API.
type protocol struct {
	key       holdKey
	name      string // the lock's name, for errors, logs and events
	cfg       *config
	primitive Primitive     // the lock's sort in events
	channel   string        // where the lock's waiters wait
	policy    notify.Policy // how the channel's messages wake them
	wakeAll   bool          // a release wakes every waiter of this process, not one
	suffix    string        // ends the fields of new holds (a write hold's ":write")
	// handoff lets a release hand the hold to a waiting call of the Client
	// (transfer); never when Redis must see every acquisition.
	handoff bool
	// fifo marks an exclusive lock whose waiting calls queue in their
	// Client (see queues): Mutex, FencedMutex, a write lock, MultiMutex.
	fifo bool
	// queued marks a lock whose waiters queue in Redis with a ticket
	// (FairMutex, Semaphore): a release names the waiters it wakes.
	queued bool
	// waitQueue marks a Mutex whose waiting calls queue in Redis (see
	// handed.go): a release hands the lock to the first live one.
	waitQueue bool
	// ticket returns the place in that queue of the waiting call a.
	ticket func(a *caller) *ticket
	// waitOnly marks a wait that takes no hold (WaitGroup.Wait): its acquire
	// answers Complete or Busy, and giving up has nothing to give back.
	waitOnly bool
	// permits marks a Semaphore: holds are permits, a new acquire after a
	// loss starts a new hold (the lost permits wait for Release).
	permits bool

	cur *atomic.Pointer[term] // the handle's latest term, for its Done and Err

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
	// queueOnly: queue (or keep the place), never take; the owner holds.
	queueOnly bool
	// synced is the WithSyncReplicas count that replicas acknowledged for
	// this acquisition (0 without the option).
	synced int
	// within, when set, is how long after its request the hold lasts at
	// least until its first renewal, when that is shorter than the lease (a
	// hold handed to a queued waiter).
	within time.Duration
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
// for up to releaseBudget; a hold's final release leaves a latch named by the
// hold's identity for longer, so that a repeat answers as the first did. After
// an acquire attempt of unknown outcome the latch lasts tombstoneTTL: a copy
// of the attempt may still be on its way (rueidis writes a command whose
// caller gave up; a stalled connection delivers it late), and the latch makes
// it take nothing. A copy later than that takes a lock for nobody, which
// expires with its lease.
const (
	releaseBudget = 3 * time.Second
	latchTTL      = "5000"  // milliseconds
	tombstoneTTL  = "60000" // milliseconds
	cleanupBudget = 2 * time.Second
)
