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
	ctx    context.Context
	cancel context.CancelFunc
	ready  chan struct{} // closed at the first confirmation
	exited chan struct{} // closed when the subscription is over
	after  chan struct{} // exited of the name's previous subscription, or nil
	linger *time.Timer   // set while the channel has no waiter; guarded by Registry.mu

	mu           sync.Mutex
	head, tail   *Waiter
	confirmCount int
}

// A Waiter is one goroutine's interest in a channel.
type Waiter struct {
	ch         *channel
	tag        string
	wake       chan struct{}
	prev, next *Waiter
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

// confirmed is the subscription hook. It runs on the connection's reading
// goroutine, so it only takes the channel's short lock.
func (ch *channel) confirmed(s rueidis.PubSubSubscription) {
	if s.Channel != ch.name || (s.Kind != "subscribe" && s.Kind != "ssubscribe") {
		return
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.confirmCount++
	if ch.confirmCount == 1 {
		close(ch.ready)
		return
	}
	// A resubscription: whatever was published in between is lost.
	ch.wakeLocked(WakeAll)
}

func (ch *channel) message(m rueidis.PubSubMessage) {
	ch.wake(ch.reg.policy(ch.name, m.Message))
}

func (ch *channel) wakeN(n int) { ch.wake(Wake{N: n}) }

func (ch *channel) wake(wk Wake) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if wk.Tag == "" {
		ch.wakeLocked(wk.N)
		return
	}
	for w := ch.head; w != nil; w = w.next {
		if w.tag == wk.Tag {
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}
}

// wakeLocked wakes n waiters (all for WakeAll), oldest first, skipping those
// that already have a wake-up pending.
func (ch *channel) wakeLocked(n int) {
	for w := ch.head; w != nil && n != 0; w = w.next {
		select {
		case w.wake <- struct{}{}:
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
