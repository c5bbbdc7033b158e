package redisync

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/notify"
	"github.com/go-redisync/redisync/internal/scripts"
)

// Errors of [Election].
var (
	// ErrNotLeader is returned by [Election.Proclaim] when the handle does
	// not lead.
	ErrNotLeader = errors.New("redisync: not the leader")
	// ErrNoLeader is returned by [Election.Leader] when nobody leads.
	ErrNoLeader = errors.New("redisync: no leader")
)

// An Election elects one leader among the campaigners of every process that
// uses the same name on the same Redis, as etcd's concurrency.Election does:
// the leader has a value (its address, say) that it may change, and anyone
// may read or observe the current leader's value.
//
// Leadership is a hold under a lease that is renewed while the leader's
// process lives (see [WithWatchdogTimeout] and [WithLease]): a leader that
// dies is replaced within one lease. Like a lock, leadership can be lost
// (see the package's safety model): Done and Err report it, and a paused
// leader may not notice in time, so fence the leader's writes where two
// leaders for a moment would harm. Campaigners wait on Pub/Sub, not by
// polling.
//
// An Election handle is one candidate: it leads at most once at a time, and
// [WithOwner] does not apply. Its data in Redis is redisync's own. An
// Election must not be copied after first use.
type Election struct {
	h handle // its Client, options, name and latest leadership
	l layout.Election
	k scripts.ElectionKeys
}

// NewElection returns a handle on the Election called name. Names, options
// and panics are as for [Client.NewMutex].
func (c *Client) NewElection(name string, opts ...Option) *Election {
	c.single("NewElection")
	e := &Election{l: layout.ElectionOf(name)}
	c.initHandle(&e.h, PrimitiveElection, name, opts)
	e.h.key = e.l.Key
	e.k = scripts.ElectionKeysOf(e.l)
	return e
}

// Name returns the Election's name, as given to its constructor.
func (e *Election) Name() string { return e.h.name }

// Context returns a copy of parent that is cancelled when the handle's
// latest leadership ends, the way to stop a leader's work: on a loss,
// [context.Cause] returns an error wrapping [ErrLockLost] and why; after
// Resign, one wrapping [ErrNotHeld]. It is cancelled at once when the handle
// does not lead. It costs no goroutine.
func (e *Election) Context(parent context.Context) context.Context { return e.h.Context(parent) }

// Done returns a channel that is closed when the handle's latest leadership
// ends, by Resign or loss; a closed one if the handle never led.
func (e *Election) Done() <-chan struct{} { return e.h.Done() }

// Err returns nil while the handle's latest leadership lasts or after it
// resigned; after a loss, an error wrapping [ErrLockLost] and its cause, as
// [Mutex.Err] does.
func (e *Election) Err() error { return e.h.Err() }

// Campaign blocks until the handle is the leader, with value as the leader's
// value, or ctx is done. If the handle leads already, Campaign proclaims
// value instead.
//
// When ctx ends first, Campaign returns ctx.Err() and leaves no leadership
// and no subscription behind. A Redis failure is returned, wrapped.
func (e *Election) Campaign(ctx context.Context, value string) error {
	if t := e.leading(); t != nil {
		return e.Proclaim(ctx, value)
	}
	return e.h.c.acquire(ctx, &call{p: e.proto(value), mode: waitFree, n: 1}, nil, returnErrors)
}

// Proclaim changes the leader's value to value while the handle leads; it
// returns an error wrapping [ErrNotLeader] otherwise (wrapping [ErrLockLost]
// too when the leadership was lost). Observers see every value proclaimed,
// unless a later one replaces it first; a Proclaim whose caller gave up and
// that lands after a later one changes nothing.
func (e *Election) Proclaim(ctx context.Context, value string) error {
	h := e.h.c.holds.ref(e.key(), existing)
	if h == nil {
		return e.wrap(ErrNotLeader)
	}
	defer e.h.c.holds.unref(h)
	if err := h.op.Lock(ctx); err != nil {
		return err
	}
	defer h.op.Unlock()
	t := h.term.Load()
	if t == nil {
		return e.wrap(ErrNotLeader)
	}
	if ended, err := t.result(); ended {
		return fmt.Errorf("%w: %w", e.wrap(ErrNotLeader), err)
	}
	// The campaign's value is number 1; t.token counts the proclamations.
	n, err := e.h.c.direct.Proclaim(ctx, &e.k, t.field, value, int64(t.token.Add(1))+1)
	switch {
	case err != nil:
		return lockError(e.h.primitive, e.h.name, err)
	case n == 0:
		e.h.c.lose(t, ErrHoldGone)
		_, err := t.result()
		return fmt.Errorf("%w: %w", e.wrap(ErrNotLeader), err)
	}
	return nil
}

// Resign ends the handle's leadership, so that a waiting campaigner, in any
// process, is elected at once. It returns nil when the handle does not lead,
// and an error wrapping [ErrLockLost] when its leadership had been lost. The
// leadership ends even when Redis cannot be reached (the error says so, and
// the release is finished in the background for up to 3 s; it expires with
// its lease).
func (e *Election) Resign(ctx context.Context) error {
	err := e.h.c.releaseHold(ctx, e.proto(""), 1)
	if errors.Is(err, ErrNotHeld) {
		return nil
	}
	return err
}

// Leader returns the current leader's value, or an error wrapping
// [ErrNoLeader] when nobody leads.
func (e *Election) Leader(ctx context.Context) (string, error) {
	rc := e.h.c.rc
	v, err := rc.Do(ctx, rc.B().Hget().Key(e.l.Key).Field(layout.ElectionValue).Build()).ToString()
	switch {
	case rueidis.IsRedisNil(err):
		return "", e.wrap(ErrNoLeader)
	case err != nil:
		return "", lockError(e.h.primitive, e.h.name, err)
	}
	return v, nil
}

// observePoll bounds an observer's wait for a message: a change it missed (a
// message lost with its connection) is read within it.
const observePoll = time.Second

// Observe returns a channel that delivers the current leader's value (if
// anyone leads) and then each change, a new leader or a new value, in order.
// A reader that falls behind may miss values in between, but it always
// receives the latest one. The channel is closed when ctx ends or the Client
// is closed.
//
// Each call runs a goroutine, which subscribes through the Client's shared
// subscriber and reads the leadership when a change is published; cancel ctx
// when done observing.
func (e *Election) Observe(ctx context.Context) <-chan string {
	out := make(chan string)
	if e.h.c.isClosed() {
		close(out)
		return out
	}
	w := e.h.c.notify.Join(e.l.Channel, notify.All, "")
	go e.observe(ctx, w, out)
	return out
}

// observe is Observe's goroutine: it reads the leadership each time waiter w
// is woken (and at least every observePoll) and offers out the value of each
// new leadership or proclamation, the latest replacing one not yet taken.
func (e *Election) observe(ctx context.Context, w *notify.Waiter, out chan<- string) {
	defer close(out)
	defer w.Leave(false)
	ctx, cancel := context.WithCancel(ctx) // ends with the Client too
	defer cancel()
	defer context.AfterFunc(e.h.c.life, cancel)()
	select {
	case <-w.Ready(): // subscribed: no change after the first read is missed
	case <-ctx.Done():
		return
	}
	poll := time.NewTicker(observePoll)
	defer poll.Stop()
	var seen layout.Leadership
	var value string
	pending := false
	for {
		if l, err := e.read(ctx); err == nil && l.Field != "" && newLeadership(l, seen) {
			seen, value, pending = l, l.Value, true
		}
	wait:
		for {
			var send chan<- string
			if pending {
				send = out
			}
			select {
			case send <- value:
				pending = false
			case <-w.Wake():
				break wait
			case <-poll.C:
				break wait
			case <-ctx.Done():
				return
			}
		}
	}
}

// read returns the leadership as Redis has it.
func (e *Election) read(ctx context.Context) (layout.Leadership, error) {
	rc := e.h.c.rc
	m, err := rc.Do(ctx, rc.B().Hgetall().Key(e.l.Key).Build()).AsStrMap()
	if err != nil {
		return layout.Leadership{}, err
	}
	return layout.ParseLeadership(m), nil
}

// ForceUnlock ends the current leadership, whoever holds it, so that a
// waiting campaigner is elected, and reports whether there was one. A
// leadership held through this Client ends as lost.
func (e *Election) ForceUnlock(ctx context.Context) (bool, error) {
	return e.h.forceUnlockHash(ctx, e.l.Channel, "0")
}

// leading returns the handle's current leadership, nil if it does not lead.
func (e *Election) leading() *term {
	h := e.h.c.holds.ref(e.key(), existing)
	t := termOf(h)
	if h != nil {
		e.h.c.holds.unref(h)
	}
	if t == nil {
		return nil
	}
	if ended, _ := t.result(); ended {
		return nil
	}
	return t
}

// key names the handle's leadership in the Client's hold table.
func (e *Election) key() holdKey { return holdKey{kind: exclusive, name: e.l.Key, owner: e.h.owner} }

// proto describes a leadership of the handle with value.
func (e *Election) proto(value string) *protocol {
	p := e.h.protocol(exclusive, e.l.Key, e.h.owner, PrimitiveElection, e.l.Channel, electionPolicy)
	p.latch = e.l.Latch
	p.acquire = func(ctx context.Context, a acquisition) (scripts.Reply, error) {
		return e.h.c.scripts.Campaign(ctx, &e.k, a.hold(e.h.leaseMS), value)
	}
	p.release = func(ctx context.Context, r release) (scripts.Released, error) {
		return e.h.c.scripts.Resign(ctx, &e.k, &r.Release)
	}
	p.newLease = func(t *term) *lease.Lease { return e.h.newLease(t, e.k[:1], scripts.MutexRenew) }
	return p
}

// wrap wraps err with the Election's name.
func (e *Election) wrap(err error) error {
	return fmt.Errorf("redisync: election %q: %w", e.h.name, err)
}

// newLeadership reports whether l, a leadership read, is not seen, the one
// shown last: another leader, or a new proclamation of the same one.
func newLeadership(l, seen layout.Leadership) bool { return l.Field != seen.Field || l.Rev != seen.Rev }
