package redisync

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-redisync/redisync/internal/bounded"
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
	primitive Primitive // the lock's sort in events
	channel   string    // where the lock's waiters wait
	suffix    string    // ends the fields of new holds (a write hold's ":write")
	latch     string    // the prefix of the lock's latch keys, "" for none (see newField)
	policy              // how its calls wait, where its holds may be handed, what it holds, whom a release wakes
	// ticket returns the place of the waiting call a in the lock's queue in
	// Redis (a Mutex handed through Redis).
	ticket func(a *call) *ticket

	cur *atomic.Pointer[term] // the handle's latest term, for its Done and Err

	acquire  func(ctx context.Context, a acquisition) (scripts.Reply, error)
	release  func(ctx context.Context, r release) (scripts.Released, error)
	newLease func(t *term) *lease.Lease
	// undo, for a protocol whose acquisitions hold nothing the engine
	// tracks (a CountingSemaphore's take permits from a count), takes back
	// what call field, for n, may have taken in an attempt of unknown
	// outcome, and makes its late copies take nothing.
	undo func(ctx context.Context, field string, n int) error
}

// A policy is the part of a protocol that the engine's branches read: four
// choices, each named. Which primitive uses which is the table below.
type policy struct {
	wait     waitPolicy
	handover handoverPolicy
	hold     holdPolicy
	wake     wakePolicy
}

// How a protocol's waiting calls wait for the lock.
type waitPolicy uint8

const (
	// On the lock's channel: a woken call asks Redis again.
	waitOnChannel waitPolicy = iota
	// In line: also in the Client's queue of the lock, in arrival order;
	// only the first of the queue asks Redis, the others wait for it (or a
	// handover) to be served.
	waitInLine
	// With a ticket in the lock's queue in Redis, kept by a heartbeat: the
	// turn is Redis', and a release names the waiters it wakes.
	waitWithTicket
)

// Where a release may hand a hold over instead of freeing the lock.
type handoverPolicy uint8

const (
	// Nowhere: every acquisition asks Redis (a fencing token each, a lock
	// whose waiters are not in line).
	noHandover handoverPolicy = iota
	// To the first call in line of the Client that may take it, without
	// Redis, within bounds (maxHandovers, maxHandoverTime).
	handoverInClient
	// That, and the first call in line queues in Redis with a heartbeat,
	// where a release hands it the lock inside its script (see wait.go).
	handoverThroughRedis
)

// What an acquisition takes.
type holdPolicy uint8

const (
	// A count of holds of one owner on one field, renewed as one.
	holdCount holdPolicy = iota
	// Permits: after a loss, a new acquisition begins a new term (the lost
	// permits wait for Release).
	holdPermits
	// Nothing the engine tracks: the call waits for something to happen
	// (WaitGroup.Wait), or takes from a count it does not track
	// (CountingSemaphore); its acquire answers Complete or Busy, and giving
	// up after an attempt of unknown outcome runs the protocol's undo, if
	// it has one.
	holdNothing
)

// Whom a release wakes among the process's waiters of the lock, and how a
// message on the lock's channel wakes them.
type wakePolicy uint8

const (
	// One waiter (notify.Handover), or the one a handover names.
	wakeOne wakePolicy = iota
	// Every waiter (notify.All): readers and writers share a channel, and a
	// Once's or a WaitGroup's end concerns them all.
	wakeEvery
	// The waiters the release names by their tickets (notify.Tagged).
	wakeNamed
	// The waiters the release names, each on a channel of its own (the
	// lock's channel + ":" + its ticket), where any message wakes it
	// (notify.All): a FairMutex in Redisson's layout, whose Java unlock
	// publishes "0" on the channel of the waiter at the head.
	wakeOwn
)

// The policies of the primitives, one line each. A Mutex hands its holds
// in the Client only (handoverInClient) when a hold handed through Redis could
// not keep its lease: a fixed lease, WithSyncReplicas, or a heartbeat
// timeout longer than the watchdog's (see Mutex.newProto). A FencedMutex
// hands nowhere: every acquisition takes a token from Redis. A
// CountingSemaphore's acquisitions take permits from Redisson's count and
// hold nothing here.
var (
	mutexPolicy     = policy{waitInLine, handoverThroughRedis, holdCount, wakeOne}
	fencedPolicy    = policy{waitInLine, noHandover, holdCount, wakeOne}
	multiPolicy     = policy{waitInLine, noHandover, holdCount, wakeOne}
	writePolicy     = policy{waitInLine, noHandover, holdCount, wakeEvery} // RWMutex's write lock
	readPolicy      = policy{waitOnChannel, noHandover, holdCount, wakeEvery}
	fairPolicy      = policy{waitWithTicket, noHandover, holdCount, wakeNamed}
	rfairPolicy     = policy{waitWithTicket, noHandover, holdCount, wakeOwn} // a FairMutex in Redisson's layout
	semaphorePolicy = policy{waitWithTicket, noHandover, holdPermits, wakeNamed}
	oncePolicy      = policy{waitOnChannel, noHandover, holdCount, wakeEvery}
	waitGroupPolicy = policy{waitOnChannel, noHandover, holdNothing, wakeEvery}
	countingPolicy  = policy{waitOnChannel, noHandover, holdNothing, wakeEvery}
	electionPolicy  = policy{waitOnChannel, noHandover, holdCount, wakeEvery}
)

// dispatch is how a message on a lock's channel wakes its waiters.
func (w wakePolicy) dispatch() notify.Policy {
	switch w {
	case wakeEvery, wakeOwn:
		return notify.All
	case wakeNamed:
		return notify.Tagged
	}
	return notify.Handover
}

// An acquisition is one acquire script call.
type acquisition struct {
	h        *hold  // the owner's record (its op held)
	field    string // the hold's identity
	latchKey string // the hold's latch key, if its field was made with it (see newField)
	count    int    // holds (permits) before: 0 for a first acquire
	n        int    // holds (permits) to add
	tk       *ticket
	// queueOnly: queue (or keep the place), never take; the owner holds.
	queueOnly bool
	// synced is the WithSyncReplicas count that replicas acknowledged for
	// this acquisition (0 without the option).
	synced int
	// within, when set, is how long after its request the hold lasts at
	// least until its first renewal, when that is shorter than the lease (a
	// hold handed to a queued waiter).
	within time.Duration
	// permitLease is an ExpirableSemaphore call's lease argument (its
	// permits' lease in milliseconds, "-1" for none).
	permitLease string
}

// hold returns what an acquire script is asked for a, under a lease of
// leaseMS milliseconds.
func (a *acquisition) hold(leaseMS string) scripts.Hold {
	h := scripts.Hold{Field: a.field, LatchKey: a.latchKey, Count: a.count, LeaseMS: leaseMS}
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

// observe reports e, an event of p's lock, to p's observer, if it has one.
func (p *protocol) observe(ctx context.Context, e Event) {
	if p.cfg.observer != nil {
		e.Client, e.Primitive, e.Name = p.cfg.name, p.primitive, p.name
		p.cfg.observer.Observe(ctx, e)
	}
}

// How an owner that already holds treats another acquire.
type holdMode uint8

const (
	waitFree     holdMode = iota // wait until the hold is released (sync.Mutex)
	waitHandover                 // the same, in a waiting call: queue for a handover
	reenter                      // add a hold (an explicit owner)
	share                        // add a hold, but wait while a lost hold is unreleased
)

// A call is one acquiring call of one owner, its whole state across its
// attempts and waits: its protocol and mode, its part in hold identity,
// its places in the queues (its Client's, Redis'), and its wait loop.
type call struct {
	p      *protocol
	mode   holdMode
	n      int   // holds (permits) to add
	single bool  // a Try call: one attempt that waits for nothing
	value  int64 // what the acquire script passed on at the last success (a fencing token)
	term   *term // the term of the last success
	// permitLease is an ExpirableSemaphore call's lease argument, passed
	// to each of its attempts.
	permitLease string
	// complete records that what the call waits for has happened with
	// nothing to hold: a Once's function succeeded, a WaitGroup reached zero.
	complete bool
	check    func() error              // if set, runs before each attempt (an upgrade is refused)
	left     func(ctx context.Context) // if set, runs when a waiting call gives up (a writer's claim)

	// Hold identity. field is the identity the call's first acquire asks
	// for, kept by its retries: a retry adopts what an earlier attempt of
	// the call took, and no other acquire does.
	field    string
	latchKey string       // the latch key field was made the tail of (see newField)
	trace    attemptTrace // what the call's attempts may have left in Redis

	// How the call waits: on the lock's channel (ch), as every waiting
	// call does, and in the way of its protocol, which keeps where the call
	// waits (nil until the call waits).
	ch  channelWait
	way waiting

	// The wait loop (wait.go).
	first   firstTry    // the fast path's attempt, when it made one (tryFirst)
	persist persistence // how failures end the call
	start   time.Time   // the call's start, taken only for an observer
	failing failureRun
}

// An attemptTrace is what a call's attempts may have left in Redis: what
// its undo gives back. firstUnknown records an attempt of unknown outcome.
// reentered is the field of the hold the latest re-entry attempt was for,
// base the count it expected, reentryUnknown that its outcome is unknown.
// sent records that an attempt reached Redis: a call that gives up may have
// something to take back. cut holds, while every attempt of unknown outcome
// was one that the call's deadline cut short (a bounded.Cut), what will
// tell those attempts' own outcomes: when each proves that its attempt
// never left the process, there is nothing to take back. It is nil when an
// outcome is unknown for good.
type attemptTrace struct {
	firstUnknown   bool
	reentered      string
	base           int
	reentryUnknown bool
	sent           bool
	cut            []<-chan error
}

// unknown records that an attempt, which err answered, has an unknown
// outcome: one of the call's first acquire (count 0), or a re-entry's
// (count, what the owner held before).
func (t *attemptTrace) unknown(err error, count int) {
	t.reentryUnknown = count > 0
	if count == 0 {
		t.unknownFirst(err)
	}
}

// unknownFirst records that an attempt of the call's first acquire, which
// err answered, has an unknown outcome.
func (t *attemptTrace) unknownFirst(err error) {
	var cut *bounded.Cut
	switch {
	case !errors.As(err, &cut):
		t.cut = nil
	case !t.firstUnknown || t.cut != nil:
		t.cut = append(t.cut, cut.Late())
	}
	t.firstUnknown = true
}

// forgetFirst records that the call's first acquire left nothing to take
// back: its identity is latched, and the next attempt takes a new one.
func (t *attemptTrace) forgetFirst() { t.firstUnknown, t.cut = false, nil }

// A waiting is what a call's way of waiting (waiting.go) keeps of where the
// call waits, as the layers below the ways ask for it: its place in its
// Client's line of the lock, its place in the lock's queue in Redis.
type waiting interface {
	// line returns the call's place in the Client's line, nil when it has
	// none.
	line() *place
	// leftLine forgets that place: a hold handed to it took it out of the
	// line.
	leftLine()
	// queue returns the call's queueing in Redis, nil when its way does
	// not queue there.
	queue() *redisQueueing
}

// placeInLine returns the call's place in its Client's line of the lock,
// nil when it has none.
func (a *call) placeInLine() *place {
	if a.way == nil {
		return nil
	}
	return a.way.line()
}

// inRedis returns the call's queueing in the lock's queue in Redis, nil
// when it does not queue there.
func (a *call) inRedis() *redisQueueing {
	if a.way == nil {
		return nil
	}
	return a.way.queue()
}

// ticket returns the call's ticket in the lock's queue in Redis, nil when
// it has none.
func (a *call) ticket() *ticket { return a.inRedis().ticket() }

// A redisQueueing is a call's place in the lock's queue in Redis, when it
// queues there: tk is its ticket. lapsed is why tk's heartbeat lapsed, until
// the call queues again; placed records that tk had a place in the queue
// (then a fresh one means the old was lost). own records that the call
// acquired with its own field, in Redis (a queued Mutex call then has no
// place left there).
type redisQueueing struct {
	tk     *ticket
	lapsed error
	placed bool
	own    bool
}

// queued records that an attempt of a sent at sent placed its ticket, if it
// has one, in its queue or kept it there, which starts or touches its
// heartbeat. The first time, it has the heartbeat's lapse wake the call's
// local channel: most calls with a ticket never queue.
func (a *call) queued(sent time.Time) {
	tk := a.ticket()
	if tk == nil {
		return
	}
	if tk.OnLapse == nil {
		tk.OnLapse = localWaker(a.ch.localChan()) // a channel in an interface: no allocation
	}
	tk.Queued(sent)
}

// acquired files that the call whose queueing q is acquired (res): a call
// whose place lapsed, and which found the lock free at its next attempt,
// lost the place all the same, and says so; own records whether the hold
// is the call's own field's in Redis.
func (q *redisQueueing) acquired(ctx context.Context, p *protocol, res attempt) {
	if q.lapsed != nil && q.placed {
		p.observe(ctx, Event{Kind: EventQueued, Cause: placeLost(q.lapsed)})
	}
	q.own = !res.localHandover && !res.reentered
}

// kept files the reply res that kept the call queued: a fresh place after
// it had one means that the old was lost (its heartbeat lapsed, or Redis
// dropped it), which it says.
func (q *redisQueueing) kept(ctx context.Context, p *protocol, res attempt) {
	if res.fresh && q.placed {
		p.observe(ctx, Event{Kind: EventQueued, Cause: placeLost(q.lapsed)})
	}
	q.lapsed = nil
}

// ticket returns q's ticket, nil when q is (the call does not queue in
// Redis) or when it has none.
func (q *redisQueueing) ticket() *ticket {
	if q == nil {
		return nil
	}
	return q.tk
}

// lapse reports whether the heartbeat of q's ticket lapsed, and files why:
// the next try queues again and restarts it.
func (q *redisQueueing) lapse() bool {
	if q.ticket() == nil {
		return false
	}
	select {
	case cause := <-q.tk.Lapsed:
		q.tk.Ended()
		q.lapsed = cause
		return true
	default:
		return false
	}
}

// A channelWait is how a call waits: on the lock's channel, w, joined under
// tag; on its local channel, local, for what this process tells it (a hold
// handed over, or a zero handover: a wake-up passed on, the end of its
// owner's hold, the lapse of its ticket); until the timer fires; until end,
// ended with the call's context or its Client. Each is made when first
// needed: most acquisitions need none (see localChan, ending).
type channelWait struct {
	w      *notify.Waiter
	joined string
	tag    string
	local  chan handover
	timer  *time.Timer
	// end, when the call's context can end, is ended by it or by the
	// Client's life (see ending).
	end       context.Context
	cancelEnd context.CancelFunc
	unhookEnd func() bool
	// returned is set when the call returns (see freeWaiter).
	returned atomic.Bool
}

// Wake wakes the call through its local channel, made beforehand: the end
// of its owner's hold (see hold.wakeWhenFree).
func (c *channelWait) Wake() { wake(c.local) }

// waiting reports whether the call has not returned yet.
func (c *channelWait) waiting() bool { return !c.returned.Load() }

// localChan returns the call's local channel, made when first needed.
func (c *channelWait) localChan() chan handover {
	if c.local == nil {
		c.local = make(chan handover, 1)
	}
	return c.local
}

// A firstTry is the outcome of a call's first attempt when the fast path
// made it (tryFirst): the wait loop starts from it.
type firstTry struct {
	tried bool
	res   attempt
	err   error
}

// A failureRun counts a call's failed attempts in a row (n), since the
// first of them.
type failureRun struct {
	n     int
	since time.Time
}

// uncertain reports whether an attempt of the call may have taken something
// that the call did not get to record: what its undo gives back.
func (a *call) uncertain() bool { return a.trace.firstUnknown || a.trace.reentryUnknown }

// waitsForHold reports whether a is a call that waits for the lock itself
// (not a share of it, not a re-entry).
func (a *call) waitsForHold() bool { return a.mode == waitFree || a.mode == waitHandover }

// outlived reports whether the permits that an attempt of the call a, sent
// at sent, was granted with a lease of their own (an ExpirableSemaphore's)
// could have run out by now: such a grant is no hold.
func (a *call) outlived(sent time.Time) bool {
	ms, err := strconv.ParseInt(a.permitLease, 10, 64)
	return err == nil && ms >= 0 && time.Since(sent) >= time.Duration(ms)*time.Millisecond
}

// An attempt is the outcome of one try to acquire.
type attempt struct {
	acquired bool
	// wait is how long the lock stays taken unless released (the holder's
	// remaining lease, or a queued waiter's deadline); negative if unknown.
	wait time.Duration
	// ownerHolds marks a call whose own owner, who does not re-enter, holds
	// the lock: the call's local channel is woken when that hold ends.
	ownerHolds bool
	// reentered marks an acquisition joining the owner's current term, and
	// localHandover one handed over by a release within the Client (no
	// Redis); complete an answer that the call's goal is reached without a
	// hold.
	reentered, localHandover, complete bool
	// handed marks a hold a release handed to the call through Redis,
	// taken from the release's message (see takeHandover).
	handed  bool
	channel string // where to wait, if not the lock's channel (scripts.Reply)
	// place is a queued Mutex call's place number (scripts.Reply), which
	// names it in the message of a release that hands it the lock; mayQueue
	// says that the call, busy and not queued yet, may queue.
	place    int64
	mayQueue bool
	// fresh: the call's ticket joined the queue with this attempt, at its
	// end, rather than kept a place (scripts.Reply).
	fresh bool
}

// A ticket is a waiting call's place in a queue in Redis, kept by a heartbeat.
type ticket = lease.Heartbeat

// A place is a waiting call's place in its Client's queue of its lock.
type place struct {
	p  *protocol
	ch chan handover // the call's local channel (channelWait.local)
}

// queueKey names the queue of p's lock: its sort and name, whatever the
// owner (a Mutex and a FencedMutex of one name share it).
func queueKey(p *protocol) holdKey { return holdKey{kind: p.key.kind, name: p.key.name} }

// queues reports whether the call a waits in its Client's queue of its
// lock: a waiting call of a handle's own owner on an exclusive lock that
// does not queue in Redis by itself (Mutex, FencedMutex, a write lock,
// MultiMutex), whose attempts all had a known outcome (a late copy of one
// could outlive a hold handed to it).
func (a *call) queues() bool {
	return a.p.wait == waitInLine && a.waitsExclusively() && !a.uncertain()
}

// waitsExclusively reports whether the call a waits for an exclusive hold
// (a free lock or one handed to it), not a Try call's one attempt.
func (a *call) waitsExclusively() bool {
	return !a.single && (a.mode == waitFree || a.mode == waitHandover)
}

// takesHandover reports whether the call a may be handed a hold by another
// call of its Client: a waiting Lock or LockContext of a Mutex handle's own
// owner.
func (a *call) takesHandover() bool {
	return a.p.handover != noHandover && a.mode == waitHandover && !a.single
}

// A persistence says how a waiting call meets failures.
type persistence uint8

const (
	// returnErrors: a call with a context returns an error reply at once,
	// and gives up on transport failures after transientBudget.
	returnErrors persistence = iota
	// retryForever: Lock, which cannot return an error, logs failures and
	// retries them with backoff until it holds the lock.
	retryForever
)
