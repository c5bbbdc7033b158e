package redisync

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// An Observer receives the events of the locks of a [Client] or of one
// handle (see [EventKind]). Set one with [WithObserver]; the module
// github.com/go-redisync/redisync/redisyncotel turns them into OpenTelemetry
// metrics and spans.
//
// Observe is called synchronously, from the goroutine that takes or releases
// the lock or from the Client's own goroutines, sometimes while the hold's
// bookkeeping is locked: it must be quick, must not block, must not call the
// Client or its handles, and may be called concurrently.
//
// For EventAcquireAttempt, EventWakeup, EventAcquired and EventAcquireFailed,
// ctx is the context given to the call (LockContext, Acquire...), so that an
// observer can relate a wait to the caller's trace; other events come with
// context.Background.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// ObserverFunc adapts a function to the [Observer] interface.
type ObserverFunc func(ctx context.Context, e Event)

// Observe calls f(ctx, e).
func (f ObserverFunc) Observe(ctx context.Context, e Event) { f(ctx, e) }

// An EventKind says what an [Event] reports.
type EventKind uint8

// The kinds of [Event]. Each hold gives one [EventAcquired] without
// Reentrant, possibly re-entries (with Reentrant), then exactly one
// [EventReleased] or [EventLost]. A waiting call (Lock, LockContext,
// Acquire, Once.Do, WaitGroup.Wait...) gives one [EventAcquireAttempt],
// [EventWakeup]s while it waits (a FairMutex or Semaphore call also an
// [EventQueued], another each time it lost its place and queued again), then [EventAcquired], [EventAcquireFailed] or
// [EventCompleted]. A single attempt (TryLock...) gives [EventAcquired]
// when it succeeds and nothing otherwise.
const (
	// EventAcquireAttempt: a waiting call begins.
	EventAcquireAttempt EventKind = iota + 1
	// EventAcquired: the owner got the lock (or the permits). Wait is the
	// time since the call began (0 for TryLock), Reentrant is set when the
	// owner already held it.
	EventAcquired
	// EventAcquireFailed: a waiting call gave up. Cause is the error it
	// returned: ctx.Err() (context.DeadlineExceeded for a timeout), an error
	// wrapping ErrClosed, or a Redis failure. Wait is the time it waited.
	EventAcquireFailed
	// EventReleased: a hold ended without a loss. Hold is its length. Cause
	// is nil for a clean release, else why Redis did not confirm it (the lock
	// expires with its lease) or ErrClosed (the Client was closed).
	EventReleased
	// EventLost: a hold was lost. Cause wraps ErrLockLost and says why; Hold
	// is how long it lasted until the loss was noticed.
	EventLost
	// EventWakeup: a waiting call was woken to try again. Source says by what.
	EventWakeup
	// EventRenewalBatch: one round of lease renewals (held locks, queued
	// waiters' heartbeats) was sent: Batch of them, Failures failed (retried
	// until their lease runs out; Cause is one), Duration the round trip.
	// Primitive and Name are empty.
	EventRenewalBatch
	// EventSubscribed: Redis confirmed the Client's subscription of a
	// lock's channel (Name; Primitive is empty), again after a reconnect
	// when Resubscribed is set, which wakes the channel's waiters. The
	// Client's own channel, where a force unlock elsewhere tells it of the
	// holds it lost, is not reported.
	EventSubscribed
	// EventQueued: a waiting call of a FairMutex or a Semaphore found the lock
	// taken and Redis confirmed its place in the queue: nobody queued behind
	// it is served before it, unless it gives up or its heartbeat lapses.
	// Given once per call when it first queues, before its first
	// [EventWakeup], and again, with Cause saying why, each time it lost its
	// place and queued anew at the end of the queue: its heartbeat lapsed
	// (its process or connection stalled past the heartbeat timeout), or its
	// place was reaped or deleted, which its heartbeat or its next attempt
	// found. A call whose heartbeat lapsed and whose next attempt found the
	// lock free, and took it without queueing anew, gives it too, just
	// before its [EventAcquired]: it lost its place all the same.
	EventQueued
	// EventCompleted: a waiting call ended without taking a hold because
	// what it waited for had happened: a Once's function had succeeded, a
	// WaitGroup's counter was zero. Wait is the time it waited.
	EventCompleted
)

var eventKindNames = [...]string{"", "AcquireAttempt", "Acquired", "AcquireFailed", "Released", "Lost",
	"Wakeup", "RenewalBatch", "Subscribed", "Queued", "Completed"}

// String returns the kind's name without the Event prefix ("Acquired").
func (k EventKind) String() string { return enumName(k, eventKindNames[:], "EventKind") }

// enumName returns the name of v in names, or "typ(v)" when it has none.
func enumName[T ~uint8](v T, names []string, typ string) string {
	if int(v) < len(names) && v != 0 {
		return names[v]
	}
	return typ + "(" + strconv.Itoa(int(v)) + ")"
}

// A WakeSource says what woke a waiting call ([EventWakeup]).
type WakeSource uint8

// The sources of a wake-up.
const (
	WakePubSub      WakeSource = iota + 1 // a message on the lock's channel (a release anywhere)
	WakeLocal                             // a release, or a waiter giving up its turn, in this process
	WakeTimeout                           // the wait's bound (a lease, a queue deadline) ran out
	WakeResubscribe                       // the subscription was established again: messages may be lost
)

var wakeSourceNames = [...]string{"", "PubSub", "Local", "Timeout", "Resubscribe"}

// String returns the source's name without the Wake prefix ("PubSub").
func (s WakeSource) String() string { return enumName(s, wakeSourceNames[:], "WakeSource") }

// A Primitive names the sort of lock an [Event] is about.
type Primitive string

// The values of [Event.Primitive].
const (
	PrimitiveMutex       Primitive = "Mutex"
	PrimitiveFencedMutex Primitive = "FencedMutex"
	PrimitiveRWRead      Primitive = "RWMutex.read"
	PrimitiveRWWrite     Primitive = "RWMutex.write"
	PrimitiveFairMutex   Primitive = "FairMutex"
	PrimitiveSemaphore   Primitive = "Semaphore"
	PrimitiveOnce        Primitive = "Once"
	PrimitiveWaitGroup   Primitive = "WaitGroup"
	// PrimitiveCountingSemaphore's acquisitions take permits from a count
	// and hold nothing the Client tracks: they end as EventCompleted.
	PrimitiveCountingSemaphore Primitive = "CountingSemaphore"
	// PrimitiveExpirableSemaphore's acquisitions take leased permits with
	// ids; like a CountingSemaphore's, they end as EventCompleted.
	PrimitiveExpirableSemaphore Primitive = "ExpirableSemaphore"
	PrimitiveElection           Primitive = "Election"
	PrimitiveMultiMutex         Primitive = "MultiMutex"
)

// sort returns the primitive's type name, as errors name it: an RWMutex's
// read and write sides are both an RWMutex.
func (p Primitive) sort() string {
	if p == "" {
		return "lock"
	}
	t, _, _ := strings.Cut(string(p), ".")
	return t
}

// String returns p's name.
func (p Primitive) String() string { return string(p) }

// An Event is one thing that happened to a lock, for an [Observer]. Which
// fields are set depends on Kind (see the [EventKind] constants); the others
// are zero.
type Event struct {
	Kind      EventKind     // what happened
	Client    string        // the name of the Client (see [WithName])
	Primitive Primitive     // the sort of lock; empty for the Client's own events
	Name      string        // the lock's name as given to its constructor; for EventSubscribed, the channel
	Wait      time.Duration // how long the call waited (EventAcquired, EventAcquireFailed)
	Hold      time.Duration // how long the hold lasted since its first acquire was sent (EventReleased, EventLost)
	Duration  time.Duration // the round trip of a renewal batch (EventRenewalBatch)
	// Reentrant marks an acquisition by an owner that already held the lock
	// (EventAcquired): a re-entry, a further read hold, or more permits of a
	// Semaphore handle. It does not start a new hold.
	Reentrant bool
	// LocalHandover marks an acquisition handed over by an Unlock in this
	// process (of the same handle, or of another handle of the same Client),
	// without Redis (EventAcquired; see [Mutex.Unlock]). The hold passed on
	// ends with an EventReleased.
	LocalHandover bool
	// Handed marks an acquisition that a release in another call (of any
	// process) handed to this waiting call through Redis, which the call
	// took from the release's message without an acquire of its own
	// (EventAcquired of a Mutex; see [Mutex.Lock]). Until its first renewal,
	// a moment later, such a hold lasts only to the waiter's heartbeat
	// deadline (see [WithHeartbeatTimeout]).
	Handed       bool
	Source       WakeSource // what woke the waiter (EventWakeup)
	Resubscribed bool       // the subscription was established again (EventSubscribed)
	// Batch is the number of leases in a renewal batch, and Failures the
	// number that could not be renewed (EventRenewalBatch).
	Batch, Failures int
	// Cause is the error of EventLost, EventAcquireFailed, EventReleased and
	// EventRenewalBatch, and why a call queued again (EventQueued; see the
	// kinds).
	Cause error
}
