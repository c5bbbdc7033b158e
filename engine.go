package redisync

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/notify"
	"github.com/go-redisync/redisync/internal/quorum"
	"github.com/go-redisync/redisync/internal/scripts"
)

// The engine: how a call gets a hold, keeps it and gives it up.
//
// Layers. The engine's files read from the top down, each calling only the
// ones below it (layers_test.go checks it):
//
//   - wait.go: the wait loop;
//   - receive.go: a waiting call's side of the handovers: it queues in
//     Redis, takes the lock a release handed it there, or adopts a hold
//     handed to it within its Client;
//   - attempt.go: one attempt, which asks Redis through the lock's protocol
//     and records what it got; the fast path of an uncontended Lock and a
//     Try's single attempt;
//   - leave.go: a call that leaves, giving back its place, its field or a
//     hold handed to it;
//   - release.go: the release, and the handover a release makes instead;
//   - engine.go (this file): what a Client's calls share;
//   - handover.go: the Client's queues of waiting calls and the holds on
//     their way between calls;
//   - protocol.go: the vocabulary (protocol, call, attempt, place) and the
//     policies that set the primitives' protocols apart, with the table of
//     which primitive uses which;
//   - hold.go: the hold table;
//   - term.go: one hold from its first acquire to its end.
//
// The primitives sit on top: each is its API, its protocol (how its hold is
// taken, released and renewed in Redis, and how its waiters are woken) and
// its Lua scripts.
//
// Holds. A hold is one owner's on one lock; each, from its first acquire to
// its final release (a term), has its own identity in Redis (a field), on
// which alone the scripts act, so that a late copy of an earlier call finds
// nothing of it to change. A term ends once: released, or lost (the renewal
// found it gone, its lease ran out, a ForceUnlock deleted it, the Client
// closed), and Done and Err report how.
//
// Waiting. An uncontended Lock makes one attempt and returns (the fast
// path). Otherwise a call tries; when the lock is taken it joins the lock's
// channel and waits for a wake-up, the bound the try gave (the holder's
// remaining lease, or a queued waiter's heartbeat deadline), or the end of
// its context, and tries again. A lost message costs at most that bound. How
// a call waits, where a hold may be handed and whom a release wakes are its
// protocol's policies (protocol.go).
//
// Handovers, three routes. Within a handle and between the handles of a
// Client, the waiting calls on one exclusive lock wait in one queue of the
// Client, in arrival order (goroutines sharing a handle as well as handles
// of one name), and only the first asks Redis; a Mutex release hands its
// hold to the first that may take it, without Redis, within bounds
// (maxHandovers, maxHandoverTime), keeping its field and lease. Through
// Redis' queue, a Mutex's first waiting call queues next to the lock with a
// heartbeat, and a release hands the lock to the first live waiter inside
// its script; the waiter takes it from the message. The rules: a hold goes
// only to a call still waiting for it and comes back (to the next waiter or
// to Redis) when nobody takes it; a free lock reaches some waiter within
// about a heartbeat timeout; a call that has waited long is not overtaken by
// newcomers of its Client.

// An engine is what a Client's handles share: the rueidis client and the
// Client's identity and defaults, the script registry, the renewal
// scheduler, the subscriber, the hold table and the handovers.
type engine struct {
	// rc and direct are the rueidis client and the scripts of the calls
	// that the API makes to Redis itself, outside the wait loop and the
	// release of a hold (IsLocked, ForceUnlock, a WaitGroup's Add, a
	// permit's Release, ...): both go through the Client's gate (see gate).
	rc     rueidis.Client
	direct *scripts.Runner
	id     string // random UUID: the first half of every owner field
	cfg    config

	// scripts runs the engine's own calls: acquires, releases, undos and
	// renewals, which may outlive Close (see Client.Close).
	scripts *scripts.Runner
	leases  *lease.Scheduler
	notify  *notify.Registry

	// life ends when the Client is closed: it ends every wait, which then
	// returns ErrClosed (a wait selects on its Done, or on a context derived
	// from it and the call's), and a goroutine of the Client's own
	// (Observe's) derives its context from it.
	life       context.Context
	end        context.CancelFunc
	background tasks // runs what calls leave to do in Redis after they return
	takeBacks  pendingTakeBacks

	// sharded publishes with SPUBLISH (a cluster's sharded Pub/Sub); rcs
	// are the deployments a force unlock tells a holder on (a quorum's
	// every one); control is the Client's place on its own channel, where
	// a force unlock elsewhere tells it of the holds it took away;
	// listened records that its calls no longer wait for that channel's
	// first subscription (see listening).
	sharded  bool
	rcs      []rueidis.Client
	control  *notify.Waiter
	listened atomic.Bool

	holds     holdTable
	handovers handovers

	// quorum, on a Client from NewQuorum, asks every deployment of the
	// quorum for the holds of its Mutex handles; nil otherwise.
	quorum *quorum.Quorum
}

// tasks run what the Client's calls leave to do in Redis after they
// return (take-backs, releases finished in the background), and Close waits
// for them. A task started once Close waits runs in its caller: a
// sync.WaitGroup may not be added to, from zero, while it is waited for.
type tasks struct {
	mu      sync.Mutex
	wg      sync.WaitGroup
	waiting bool
}

// Go runs f in a goroutine of its own, or, once Wait has begun, in the
// caller.
func (b *tasks) Go(f func()) {
	b.mu.Lock()
	if b.waiting {
		b.mu.Unlock()
		f()
		return
	}
	b.wg.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.wg.Done()
		f()
	}()
}

// Wait waits for the tasks started so far.
func (b *tasks) Wait() {
	b.mu.Lock()
	b.waiting = true
	b.mu.Unlock()
	b.wg.Wait()
}

// settleWait bounds how long an attempt waits for the take-backs still
// running on its lock (see settled).
const settleWait = 250 * time.Millisecond

// pendingTakeBacks counts, by lock name, the take-backs of the Client's
// calls still running in the background (see cleanUp).
type pendingTakeBacks struct {
	total atomic.Int64 // every name's: 0 spares the attempts the map
	mu    sync.Mutex
	by    map[string]*pendingName
}

type pendingName struct {
	n    int
	done chan struct{} // closed when n returns to 0
}

// add counts a take-back on name in, and returns the function that counts
// it out.
func (pt *pendingTakeBacks) add(name string) (finished func()) {
	pt.total.Add(1)
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if pt.by == nil {
		pt.by = make(map[string]*pendingName)
	}
	pn := pt.by[name]
	if pn == nil {
		pn = &pendingName{done: make(chan struct{})}
		pt.by[name] = pn
	}
	pn.n++
	return func() {
		pt.mu.Lock()
		defer pt.mu.Unlock()
		if pn.n--; pn.n == 0 {
			close(pn.done)
			delete(pt.by, name)
		}
		pt.total.Add(-1)
	}
}

// settled waits until no take-back of the Client's calls on name is still
// running, for settleWait at most, or until ctx ends. A call that gave up
// returns before what it took is back when Redis does not answer at once
// (see cleanUp); the Client's next call on the lock finds it back, as with
// sync's and x/sync's locks, whenever Redis answers within the wait.
func (pt *pendingTakeBacks) settled(ctx context.Context, name string) {
	if pt.total.Load() == 0 {
		return
	}
	pt.mu.Lock()
	pn := pt.by[name]
	pt.mu.Unlock()
	if pn == nil {
		return
	}
	t := time.NewTimer(settleWait)
	defer t.Stop()
	select {
	case <-pn.done:
	case <-t.C:
	case <-ctx.Done():
	}
}

// backOff waits before the next attempt of what the Client retries in the
// background (attempt counts those made: 50 ms each, a second at most) and
// reports whether to make it: not once the Client closed, nor when until
// (zero for no limit) comes before the wait ends.
func (e *engine) backOff(attempt int, until time.Time) bool {
	d := min(time.Duration(attempt)*50*time.Millisecond, time.Second)
	if !until.IsZero() && time.Until(until) < d {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-e.life.Done():
		return false
	}
}

// isClosed reports whether the Client was closed.
func (e *engine) isClosed() bool {
	select {
	case <-e.life.Done():
		return true
	default:
	}
	return false
}

// A gate is the rueidis client of the calls that the API makes to Redis
// itself (see engine.rc): once the Client is closed it sends nothing and
// answers ErrClosed, so that such a call fails as the wait loop does (see
// acquire) and leaves Redis as Close left it. The engine's own calls do not
// go through it: a release that Close waits for, or the undo of a call
// that gave up because of Close, must still reach Redis. The API sends
// only Do and DoMulti.
type gate struct {
	rueidis.Client
	closed <-chan struct{}
}

// Do sends cmd unless the Client is closed.
func (g gate) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	select {
	case <-g.closed:
		return rueidis.NewErrorResult(ErrClosed)
	default:
	}
	return g.Client.Do(ctx, cmd)
}

// DoMulti sends cmds unless the Client is closed.
func (g gate) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	select {
	case <-g.closed:
		results := make([]rueidis.RedisResult, len(cmds))
		for i := range results {
			results[i] = rueidis.NewErrorResult(ErrClosed)
		}
		return results
	default:
	}
	return g.Client.DoMulti(ctx, cmds...)
}

// lose ends term t as lost for cause and stops its renewal.
func (e *engine) lose(t *term, cause error) {
	e.leases.Remove(t.lease)
	t.lost(cause)
}

// endForced ends, as force-unlocked, this Client's holds among fields, the
// hold fields that a force unlock deleted, and remembers those no term has
// yet: a hold being recorded ends as soon as it is (see begin). A field is
// one hold's alone, whatever its lock.
func (e *engine) endForced(fields []string) {
	e.endHolds(func(_ holdKey, t *term) bool { return slices.Contains(fields, t.field) },
		func(t *term) { t.lost(ErrForceUnlocked) },
		func(live map[string]bool) { e.holds.forget(fields, e.id+":", live) })
}

// listen joins the Client's own channel, where a force unlock elsewhere
// publishes the fields of this Client's holds that it deleted. A notice
// published while the channel is not subscribed is not heard: a Client's
// first calls wait for its subscription (listening), and each confirmation
// of it renews every hold at once (heard), which finds a hold deleted
// meanwhile.
func (e *engine) listen() {
	e.control = e.notify.Join(layout.ClientChannel(e.id), func(message string) notify.Wake {
		fields := strings.Split(message, "\n")
		e.background.Go(func() { e.endForced(fields) }) // not on the connection's reader: an Observer may block
		return notify.Wake{}
	}, "")
}

// listening waits, as long as ctx lasts and listenWait at most, for the
// first subscription of the Client's own channel (listen), which New
// starts: a hold taken before it would not hear a force unlock that comes
// at once. Once the subscription is confirmed, or a wait ran out, calls no
// longer wait; a later confirmation finds what was missed (heard).
func (e *engine) listening(ctx context.Context) {
	if e.listened.Load() {
		return
	}
	t := time.NewTimer(listenWait)
	defer t.Stop()
	select {
	case <-e.control.Ready():
	case <-t.C:
	case <-ctx.Done():
		return
	case <-e.life.Done(): // closed: the call ends with ErrClosed
		return
	}
	e.listened.Store(true)
}

// listenWait bounds how long a Client's first calls wait for its own
// channel's subscription (see listening): a server whose Pub/Sub is slow
// or down delays a new Client's first hold this long at most.
const listenWait = 500 * time.Millisecond

// heard is told of each confirmed subscription of the Client's own channel
// (listen): a force unlock's notice published while the channel was not
// subscribed (before the first confirmation, or between a connection's loss
// and the resubscription) was lost, so every hold is renewed at once, and a
// renewal that finds its hold gone reports the loss.
func (e *engine) heard() { e.leases.CheckNow() }

// tell publishes, on the channel of each other Client that held one of
// fields (the holds a force unlock deleted), the fields that were its, so
// that its holders learn of the loss at once. A Client that does not listen
// (gone, or not redisync's: a Java client's field) learns at its next
// renewal; tell reports how many Clients heard.
func (e *engine) tell(ctx context.Context, fields []string) int {
	byClient := map[string][]string{}
	for _, f := range fields {
		if id := layout.ClientOf(f); id != "" && id != e.id {
			byClient[id] = append(byClient[id], f)
		}
	}
	told := 0
	for id, fs := range byClient {
		heard := false
		for _, rc := range e.rcs {
			var cmd rueidis.Completed
			channel, message := layout.ClientChannel(id), strings.Join(fs, "\n")
			if e.sharded {
				cmd = rc.B().Spublish().Channel(channel).Message(message).Build()
			} else {
				cmd = rc.B().Publish().Channel(channel).Message(message).Build()
			}
			if n, err := rc.Do(ctx, cmd).AsInt64(); err == nil && n > 0 {
				heard = true
			}
		}
		if heard {
			told++
		}
	}
	return told
}

// endHolds stops the renewal of every live term of this Client's holds
// (those being handed over between handles included) that match accepts, and
// ends it with end.
// If seen is set, it is called (the table's mutex held) with the fields of
// every live term of this Client's, those being handed over included.
func (e *engine) endHolds(match func(holdKey, *term) bool, end func(*term), seen func(live map[string]bool)) {
	var terms []*term
	var live map[string]bool
	if seen != nil {
		live = make(map[string]bool)
	}
	each := func(key holdKey, t *term) {
		if live != nil {
			live[t.field] = true
		}
		if match(key, t) {
			terms = append(terms, t)
		}
	}
	e.handovers.mu.Lock() // a hold being handed over is in handing or in its new record
	e.holds.mu.Lock()
	e.holds.terms(each)
	e.handovers.terms(each)
	if seen != nil {
		seen(live)
	}
	e.holds.mu.Unlock()
	e.handovers.mu.Unlock()
	for _, t := range terms {
		e.leases.Remove(t.lease)
		end(t)
	}
}

// lastWaiter numbers the waiting calls of the process.
var lastWaiter atomic.Uint64

// newTicket returns a ticket for a queue whose heartbeat and queue keys are
// alive and queue. The id is unique across Clients: "<client-uuid>:w<n>".
func (e *engine) newTicket(alive, queue string, cfg *config) *ticket {
	return e.leases.NewHeartbeat(e.waiterID(), alive, queue, cfg.heartbeat)
}

// newTicketBy returns a ticket as newTicket does, whose heartbeat the script
// renew keeps, given extra after the id and the timeout.
func (e *engine) newTicketBy(renew *scripts.Script, alive, queue string, cfg *config, extra ...string) *ticket {
	return e.leases.NewHeartbeatBy(renew, e.waiterID(), alive, queue, cfg.heartbeat, extra...)
}

// waiterID returns a new waiter id, unique across Clients.
func (e *engine) waiterID() string { return e.id + ":w" + strconv.FormatUint(lastWaiter.Add(1), 10) }
