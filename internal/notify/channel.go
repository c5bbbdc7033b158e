package notify

import (
	"context"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// channel is one subscribed channel and its waiters, oldest first.
type channel struct {
	name   string
	reg    *Registry
	policy Policy
	ctx    context.Context
	cancel context.CancelFunc
	ready  chan struct{} // closed at the first confirmation (on any server)
	exited chan struct{} // closed when the subscription is over (on every server)
	// running counts the servers whose subscription goroutine has not
	// exited; guarded by Registry.mu.
	running int
	after   chan struct{} // exited of the name's previous subscription, or nil
	linger  *time.Timer   // set while the channel has no waiter; guarded by Registry.mu

	mu         sync.Mutex
	head, tail *Waiter
	// confirms counts the confirmations of the subscription, by server:
	// a server's second one on is a resubscription.
	confirms []int
	// unclaimed keeps the latest tags that wake-ups named while no waiter
	// had them: a waiter learns its tag from a reply that can arrive after
	// the message naming it (they come on different connections), so Join
	// and Retag look here first.
	unclaimed [8]string
	nextSlot  int
	// echo records that the last message asked for an echo (Wake.Echo):
	// the next one wakes only waiters without a tag.
	echo bool
}

// A Waiter is one goroutine's interest in a channel.
type Waiter struct {
	ch         *channel
	tag        string
	wake       chan struct{}
	source     Source // of the latest wake-up sent on wake; guarded by ch.mu
	named      bool   // a wake-up named w by its tag since Named last looked; guarded by ch.mu
	prev, next *Waiter
}

// A Source says what sent a wake-up.
type Source uint8

// The sources of a wake-up.
const (
	FromLocal       Source = iota // WakeOne, WakeAll, WakeTag, a waiter passing on, Close
	FromMessage                   // a Pub/Sub message
	FromResubscribe               // the subscription was established again
)

// Source returns what sent w's latest wake-up. Called after a receive from
// Wake, it names the sender of that wake-up unless another one is pending.
func (w *Waiter) Source() Source {
	w.ch.mu.Lock()
	defer w.ch.mu.Unlock()
	return w.source
}

// Named reports whether a wake-up (a message or WakeTag) named w by its tag
// since the last call of Named or Retag; a wake-up for w is then pending or
// was received, even when another one was pending when it came.
func (w *Waiter) Named() bool {
	w.ch.mu.Lock()
	defer w.ch.mu.Unlock()
	named := w.named
	w.named = false
	return named
}

// Retag gives w the tag tag in place of the one it joined with; wake-ups
// for the old tag no longer reach it. A recent wake-up that named tag
// before any waiter had it wakes w now.
func (w *Waiter) Retag(tag string) {
	w.ch.mu.Lock()
	defer w.ch.mu.Unlock()
	w.tag, w.named = tag, false
	w.ch.claim(w)
}

// claim wakes w if a recent wake-up named its tag while no waiter had it
// (ch.mu held).
func (ch *channel) claim(w *Waiter) {
	if w.tag == "" {
		return
	}
	for i, tag := range ch.unclaimed {
		if tag == w.tag {
			ch.unclaimed[i] = ""
			w.named = true
			select {
			case w.wake <- struct{}{}:
				w.source = FromLocal
			default:
			}
			return
		}
	}
}

// Ready returns a channel that is closed once the subscription has been
// confirmed. A waiter should check the lock only after that, or it can miss a
// release that happens between its check and the subscription.
func (w *Waiter) Ready() <-chan struct{} { return w.ch.ready }

// Wake returns the channel on which w is woken. A wake-up stays pending until
// it is received, so none is lost between two checks.
func (w *Waiter) Wake() <-chan struct{} { return w.wake }

// Leave unregisters w. A waiter that leaves without taking what it waited for
// sets passOn, so that a wake-up it may have swallowed goes to another waiter.
func (w *Waiter) Leave(passOn bool) { w.ch.reg.leave(w, passOn) }

// confirmed is the subscription hook of server i. It runs on the
// connection's reading goroutine, so it only takes the channel's short lock.
func (ch *channel) confirmed(i int, s rueidis.PubSubSubscription) {
	if s.Channel != ch.name || (s.Kind != "subscribe" && s.Kind != "ssubscribe") {
		return
	}
	ch.mu.Lock()
	first := true
	for _, n := range ch.confirms {
		first = first && n == 0
	}
	ch.confirms[i]++
	again := ch.confirms[i] > 1
	switch {
	case first:
		close(ch.ready)
	case !again:
		// Another server's first confirmation: nothing was missed there
		// that a waiter could have counted on.
	default:
		// A resubscription: whatever was published in between is lost.
		ch.echo = false
		ch.wakeLocked(WakeAll, FromResubscribe, false)
	}
	ch.mu.Unlock()
	if f := ch.reg.onSubscribe; f != nil {
		f(ch.name, again)
	}
}

func (ch *channel) message(m rueidis.PubSubMessage) {
	if f := ch.reg.onMessage; f != nil {
		f(ch.name, m.Message)
	}
	wk := ch.policy(m.Message)
	ch.mu.Lock()
	defer ch.mu.Unlock()
	untagged := ch.echo
	ch.echo = wk.Echo
	if untagged && wk.Tag == "" {
		ch.wakeLocked(wk.N, FromMessage, true)
		return
	}
	ch.wakeTagged(wk, FromMessage)
}

func (ch *channel) wakeN(n int, src Source) { ch.wake(Wake{N: n}, src) }

// wake wakes the waiters wk names; for a tag it reports whether a waiter
// had it (else the tag is kept for a waiter about to take it).
func (ch *channel) wake(wk Wake, src Source) bool {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.wakeTagged(wk, src)
}

// wakeTagged is wake with ch.mu held.
func (ch *channel) wakeTagged(wk Wake, src Source) bool {
	if wk.Tag == "" {
		ch.wakeLocked(wk.N, src, false)
		return true
	}
	found := false
	for w := ch.head; w != nil; w = w.next {
		if w.tag == wk.Tag {
			found, w.named = true, true
			select {
			case w.wake <- struct{}{}:
				w.source = src
			default:
			}
		}
	}
	if !found {
		ch.unclaimed[ch.nextSlot] = wk.Tag
		ch.nextSlot = (ch.nextSlot + 1) % len(ch.unclaimed)
	}
	return found
}

// wakeLocked wakes n waiters (all for WakeAll), oldest first, skipping those
// that already have a wake-up pending, and, when untagged is set, those
// that joined with a tag.
func (ch *channel) wakeLocked(n int, src Source, untagged bool) {
	for w := ch.head; w != nil && n != 0; w = w.next {
		if untagged && w.tag != "" {
			continue
		}
		select {
		case w.wake <- struct{}{}:
			w.source = src
			n--
		default:
		}
	}
}

func (ch *channel) push(w *Waiter) {
	w.prev = ch.tail
	if ch.tail != nil {
		ch.tail.next = w
	} else {
		ch.head = w
	}
	ch.tail = w
}

func (ch *channel) remove(w *Waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		ch.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		ch.tail = w.prev
	}
	w.prev, w.next = nil, nil
}
