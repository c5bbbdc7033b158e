package redisync

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/mutant"
	"github.com/go-redisync/redisync/internal/notify"
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

	acquire  func(ctx context.Context, a acquisition) (reply, error)
	release  func(ctx context.Context, r release) (releaseReply, error)
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

// A reply is an acquire script's outcome, and for acquired a value to pass
// on (a fencing token), for busy how long to wait in milliseconds.
type reply struct {
	outcome int
	value   int64
}

// Outcomes of an acquire script.
const (
	acquired = iota
	busy
	gone    // a re-entry found the hold lost
	refused // a first acquire found its call's latch (see errRefused)
)

// A release is one release script call: the hold field goes from from holds
// to to (0 releases it). latch is how long, in milliseconds, the final
// release's latch lasts ("" for none); undo makes the script leave the latch
// even when the hold is not there; id, if set, is a queued waiter leaving.
type release struct {
	h        *hold
	field    string
	from, to int
	latch    string
	undo     bool
	id       string
}

// A releaseReply is a release script's outcome: status 1 when the hold is
// gone by this release (or a repeat of it), 0 when it is still held, -1 when
// it was not there (-4: a stale call of a Semaphore); woken names the queued
// waiters the release woke.
type releaseReply struct {
	status int64
	woken  []string
}

// argv fills a with the ARGV of the release scripts of the Redisson layouts,
// and returns it: field, from, to, the publish command, the latch lifetime,
// and the undo flag. (The caller's array spares an allocation per release.)
func (r *release) argv(a *[6]string, publish string) []string {
	undo, latch := "0", r.latch
	if r.undo {
		undo = "1"
	}
	if latch == "" {
		latch = "0"
	}
	*a = [6]string{r.field, strconv.Itoa(r.from), strconv.Itoa(r.to), publish, latch, undo}
	return a[:]
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

// errRefused is returned by an acquire that found its own call's latch: only
// a late copy of an attempt should ever see that.
var errRefused = errors.New("the acquire was refused: its call had been undone")

// lastHold numbers the holds of the process: a hold's identity in Redis is
// "<client-uuid>:<n>", as Redisson's field is "<uuid>:<thread-id>".
var lastHold atomic.Uint64

// newField returns the identity of a new hold of owner, ending in suffix: a
// field no other hold has had. (The owner-field mutant gives every hold of
// an owner the same one, as redisync once did.)
func (c *Client) newField(owner uint64, suffix string) string {
	if mutant.On("owner-field") {
		return c.field(owner) + suffix
	}
	var buf [64]byte
	b := append(buf[:0], c.id...)
	b = append(b, ':')
	b = strconv.AppendUint(b, lastHold.Add(1), 10)
	return string(append(b, suffix...))
}
