// Package notify is the subscriber: one multiplexed set of Pub/Sub
// subscriptions per redisync Client, shared by every waiter of every handle.
//
// Each channel that has waiters in this process gets one rueidis Receive on the
// shared client (rueidis resubscribes it after a reconnect and routes a sharded
// subscription to the slot's node); the channel is unsubscribed when its last
// waiter leaves and a short linger has passed. Messages wake waiters without blocking the connection's
// reader. Every confirmation of a subscription after the first wakes all of
// the channel's waiters: messages published while the connection was down are
// lost, so waiters must re-check the lock instead of trusting the silence.
//
// Pub/Sub only makes waiters fast. Waiters also bound every wait by the
// holder's remaining lease, so a lost message costs time, never a hang.
package notify

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// WakeAll, as a [Wake]'s N, wakes every waiter of the channel.
const WakeAll = -1

// Linger is how long a channel stays subscribed after its last waiter left.
// Waiters of a busy lock come and go with every handover; keeping the
// subscription a moment spares each of them a SUBSCRIBE and an UNSUBSCRIBE.
const Linger = time.Second

// A Wake says which waiters of a channel a message wakes: the waiter that
// joined with Tag when Tag is set, otherwise the N longest-waiting ones
// (every one for WakeAll).
type Wake struct {
	N   int    // how many waiters, oldest first; WakeAll for all
	Tag string // the one waiter to wake, by the tag it joined with
	// Echo marks a message whose publisher follows it with an echo for the
	// waiters without a tag: the channel's next message wakes, as its
	// policy says, only waiters that joined without one.
	Echo bool
}

// A Policy turns a message on a channel into the waiters it wakes. A waiter
// gives its channel's policy when it joins: the caller knows what the
// messages mean.
type Policy func(message string) Wake

// Redisson is the policy of Redisson's lock channels: "1" (a write lock was
// released, so every reader may enter) wakes every waiter; any other message
// ("0": a lock was released, one waiter can take it) wakes one.
func Redisson(message string) Wake {
	if message == "1" {
		return Wake{N: WakeAll}
	}
	return Wake{N: 1}
}

// Handover is the policy of a Mutex's channel, Redisson's lock channel
// where redisync's releases also hand the lock to a queued waiter: "0" and
// "1" are Redisson's (see [Redisson]); any other message is the tag of the
// one waiter it names, which the lock was handed to, and is echoed (see
// [Wake.Echo]): the release's "0" that follows it wakes one waiter that is
// not queued, so that it looks at the lock again.
func Handover(message string) Wake {
	if message == "0" || message == "1" {
		return Redisson(message)
	}
	return Wake{Tag: message, Echo: true}
}

// All is the policy of a channel where any message may let every waiter in,
// or any one of them: an RWMutex's, whose "0" (a Redisson reader was the last
// to leave) may be for a waiting writer or for readers held back by it.
func All(string) Wake { return Wake{N: WakeAll} }

// Tagged is the policy of a channel whose messages name the one waiter they
// are for (by the tag it joined with): a queue's head, or a waiter whose
// request fits now.
func Tagged(message string) Wake { return Wake{Tag: message} }

// Registry holds the subscriptions of one Client.
type Registry struct {
	// rcs are the servers a channel is subscribed on: one, or each server
	// of a quorum, any of whose messages wakes the channel's waiters.
	rcs     []rueidis.Client
	sharded bool
	log     *slog.Logger
	// onSubscribe, if set, is told of every confirmed (re)subscription.
	onSubscribe func(channel string, again bool)
	// onMessage, if set, is told of every message before it wakes anyone.
	onMessage func(channel, message string)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	chans map[string]*channel
	// closing holds, per name, the exit of a subscription that is being
	// unsubscribed. A new subscription of the name waits for it: an
	// UNSUBSCRIBE that crossed the new SUBSCRIBE would cancel it.
	closing map[string]chan struct{}
}

// An Option configures a Registry.
type Option func(*Registry)

// OnSubscribe makes the Registry call f each time Redis confirms the
// subscription of a channel, with again set from the second confirmation of
// the same subscription on (a resubscription after a reconnect). f runs on the
// connection's reading goroutine and must not block.
func OnSubscribe(f func(channel string, again bool)) Option {
	return func(r *Registry) { r.onSubscribe = f }
}

// OnMessage makes the Registry call f with each message that arrives, before
// the message wakes any waiter (the handover benchmark times its stages with
// it). f runs on the connection's reading goroutine and must not block.
func OnMessage(f func(channel, message string)) Option {
	return func(r *Registry) { r.onMessage = f }
}

// New returns a Registry that subscribes through rc, with SSUBSCRIBE when
// sharded is set and SUBSCRIBE otherwise.
func New(rc rueidis.Client, sharded bool, log *slog.Logger, opts ...Option) *Registry {
	return NewOver([]rueidis.Client{rc}, sharded, log, opts...)
}

// NewOver returns a Registry that subscribes each channel on every client
// of rcs (the servers of a quorum, each a deployment of its own): a
// message on any of them wakes the channel's waiters, and a channel is
// ready once one of them confirmed it.
func NewOver(rcs []rueidis.Client, sharded bool, log *slog.Logger, opts ...Option) *Registry {
	ctx, cancel := context.WithCancel(context.Background())
	r := &Registry{
		rcs:     rcs,
		sharded: sharded,
		log:     log,
		ctx:     ctx,
		cancel:  cancel,
		chans:   make(map[string]*channel),
		closing: make(map[string]chan struct{}),
	}
	for _, opt := range opts {
		opt(r)
	}
	return r
}

// Join registers a new waiter on channel, whose messages wake waiters by
// policy, and subscribes to it if this is the channel's first waiter (the
// policy given then serves the channel). A non-empty tag names the waiter
// for messages (and WakeTag) that wake one waiter by name, such as the head
// of a queue. The caller must Leave when it stops waiting.
func (r *Registry) Join(name string, policy Policy, tag string) *Waiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := r.chans[name]
	if ch == nil {
		ctx, cancel := context.WithCancel(r.ctx)
		ch = &channel{name: name, reg: r, policy: policy, ctx: ctx, cancel: cancel,
			ready: make(chan struct{}), exited: make(chan struct{}), after: r.closing[name],
			confirms: make([]int, len(r.rcs))}
		r.chans[name] = ch
		if r.ctx.Err() == nil {
			r.wg.Add(len(r.rcs))
			ch.running = len(r.rcs)
			for i, rc := range r.rcs {
				go r.run(ch, rc, i)
			}
		} else {
			close(ch.ready) // closed Registry: nothing to wait for
			close(ch.exited)
		}
	}
	if ch.linger != nil {
		ch.linger.Stop()
		ch.linger = nil
	}
	w := &Waiter{ch: ch, tag: tag, wake: make(chan struct{}, 1)}
	ch.mu.Lock()
	ch.push(w)
	ch.claim(w)
	ch.mu.Unlock()
	return w
}

// WakeOne wakes one waiter of channel in this process, the longest waiting
// one that has no wake-up pending. A local unlock uses it so that a waiter in
// the same process does not wait for the Pub/Sub round trip.
func (r *Registry) WakeOne(name string) {
	if ch := r.lookup(name); ch != nil {
		ch.wakeN(1, FromLocal)
	}
}

// WakeAll wakes every waiter of channel in this process.
func (r *Registry) WakeAll(name string) {
	if ch := r.lookup(name); ch != nil {
		ch.wakeN(WakeAll, FromLocal)
	}
}

// WakeTag wakes the waiters of channel in this process that have tag, and
// reports whether there was one (if not, a waiter that takes the tag soon
// is woken then).
func (r *Registry) WakeTag(name, tag string) bool {
	if ch := r.lookup(name); ch != nil {
		return ch.wake(Wake{Tag: tag}, FromLocal)
	}
	return false
}

// Confirmed reports whether channel is subscribed in this process, with
// its subscription confirmed (it has waiters, or had them within Linger):
// a message published from now on reaches a waiter that joins it.
func (r *Registry) Confirmed(name string) bool {
	r.mu.Lock()
	ch := r.chans[name]
	r.mu.Unlock()
	if ch == nil {
		return false
	}
	select {
	case <-ch.ready:
		return true
	default:
		return false
	}
}

// Subscribed returns the number of channels with waiters in this process.
func (r *Registry) Subscribed() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.chans)
}

// Close unsubscribes every channel, wakes every waiter and waits until the
// subscription goroutines have exited.
func (r *Registry) Close() {
	r.cancel()
	r.mu.Lock()
	for _, ch := range r.chans {
		if ch.linger != nil {
			ch.linger.Stop()
		}
		ch.wakeN(WakeAll, FromLocal)
	}
	r.mu.Unlock()
	r.wg.Wait()
}

func (r *Registry) lookup(name string) *channel {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.chans[name]
}

// leave removes w from its channel, and the channel when w was its last waiter.
func (r *Registry) leave(w *Waiter, passOn bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := w.ch
	ch.mu.Lock()
	ch.remove(w)
	empty := ch.head == nil
	if passOn && !empty {
		ch.wakeLocked(1, FromLocal, false)
	}
	ch.mu.Unlock()
	if empty && r.chans[ch.name] == ch && !mutantLeakSubscribe {
		ch.linger = time.AfterFunc(Linger, func() { r.expire(ch) })
	}
}

// expire unsubscribes ch if no waiter joined it during its linger.
func (r *Registry) expire(ch *channel) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.chans[ch.name] != ch || ch.head != nil {
		return
	}
	delete(r.chans, ch.name)
	r.closing[ch.name] = ch.exited
	ch.cancel()
}

// run keeps channel subscribed on rc, the registry's server i, until its
// context ends.
func (r *Registry) run(ch *channel, rc rueidis.Client, i int) {
	defer r.wg.Done()
	defer r.exit(ch)
	if ch.after != nil {
		select {
		case <-ch.after:
		case <-ch.ctx.Done():
			return
		}
	}
	// The connection that carries the subscription, as the last Receive saw
	// it. The UNSUBSCRIBE goes there, after Receive has returned: sent from
	// the return hook, it would wait for its reply while rueidis still feeds
	// this Receive's buffer, which nobody reads any more, and a full buffer
	// stalls the connection's reader.
	var wire rueidis.CommandClient
	ctx := rueidis.WithOnSubscriptionHook(ch.ctx, func(s rueidis.PubSubSubscription) { ch.confirmed(i, s) })
	ctx = rueidis.WithOnReceiveReturnHook(ctx, func(err error, cc rueidis.CommandClient) error {
		wire = cc
		return err
	})
	for failures := 0; ; {
		err := rc.Receive(ctx, r.subscribe(rc, ch.name), ch.message)
		if ch.ctx.Err() != nil {
			if wire != nil {
				r.unsubscribe(wire, ch.name)
			}
			return
		}
		if errors.Is(err, rueidis.ErrClosing) {
			r.log.Warn("redisync: rueidis client closed; waiters fall back to lease timers", "channel", ch.name)
			return
		}
		// The subscription ended with waiters left: the server dropped it (a
		// slot moved, or an UNSUBSCRIBE of an earlier subscriber of this channel
		// crossed our SUBSCRIBE) or the connection failed beyond rueidis's
		// retries. Messages may have been missed, so waiters re-check.
		ch.wakeN(WakeAll, FromResubscribe)
		if err == nil {
			failures = 0
			continue
		}
		failures++
		if failures == 3 {
			r.log.Warn("redisync: subscription failing; waiters fall back to lease timers",
				"channel", ch.name, "error", err)
		}
		d := min(time.Duration(failures)*50*time.Millisecond, time.Second)
		select {
		case <-time.After(d/2 + rand.N(d)):
		case <-ch.ctx.Done():
			return
		}
	}
}

// exit records that ch's subscription on one server is over, and when it
// is over on every server, that ch's is.
func (r *Registry) exit(ch *channel) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ch.running--; ch.running > 0 {
		return
	}
	close(ch.exited)
	if r.closing[ch.name] == ch.exited {
		delete(r.closing, ch.name)
	}
}

func (r *Registry) subscribe(rc rueidis.Client, name string) rueidis.Completed {
	if r.sharded {
		return rc.B().Ssubscribe().Channel(name).Build()
	}
	return rc.B().Subscribe().Channel(name).Build()
}

// unsubscribe ends the subscription on the connection that carries it; a
// cluster client would send a plain UNSUBSCRIBE to an arbitrary node.
func (r *Registry) unsubscribe(cc rueidis.CommandClient, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var cmd rueidis.Completed
	if r.sharded {
		cmd = cc.B().Sunsubscribe().Channel(name).Build()
	} else {
		cmd = cc.B().Unsubscribe().Channel(name).Build()
	}
	cc.Do(ctx, cmd)
}
