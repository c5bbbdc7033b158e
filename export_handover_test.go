package redisync

import (
	"context"
	"errors"
	"time"
)

// LongHandoversForTest lifts the time bound of local handovers (1 ms) until
// restore is called, for tests whose steps may take longer than that on a
// loaded machine.
func LongHandoversForTest() (restore func()) {
	saved := maxHandoverTime
	maxHandoverTime = time.Hour
	return func() { maxHandoverTime = saved }
}

// WithOnMessageForTest makes a Client call f with each Pub/Sub message it
// receives, on the connection's reading goroutine, before the message wakes
// anyone.
func WithOnMessageForTest(f func(channel, message string)) Option {
	return func(cfg *config) { cfg.onMessage = f }
}

// ReadRenewEveryForTest sets how often read holds are renewed until restore
// is called.
func ReadRenewEveryForTest(d time.Duration) (restore func()) {
	saved := readRenewEvery
	readRenewEvery = d
	return func() { readRenewEvery = saved }
}

// HandoverWaitersForTest returns how many waiting calls of c wait in its
// queue of the Mutex called name.
func HandoverWaitersForTest(c *Client, name string) int {
	c.handovers.mu.Lock()
	defer c.handovers.mu.Unlock()
	return len(c.handovers.queues[holdKey{kind: exclusive, name: name}])
}

// HandOverInFlightForTest unlocks giver while a call of taker (another
// handle of the same Client) is queued for a handed hold, as a waiting
// LockContext is, but does not take it: the hold stays on its way until take
// takes it as the waiting call would. take reports whether it did, and the
// hold's end if it had ended; an error if nothing was handed over. take
// waits for the taker's owner's other calls as long as ctx lasts.
func HandOverInFlightForTest(giver, taker *Mutex) (take func(ctx context.Context) (adopted bool, ended error)) {
	p := taker.proto(taker.owner)
	w := taker.c.handovers.queue(&call{p: p, mode: waitHandover, n: 1})
	giver.Unlock()
	return takeHandedForTest(taker, p, w)
}

// HandOverPokedForTest is HandOverInFlightForTest with a wake-up passed on
// to the taker's queued call (a poke) pending when giver's Unlock hands it
// the hold, as when a call queued behind it passed on a Pub/Sub wake-up: the
// hold must reach the call all the same, and Unlock must not wait for the
// call to take the wake-up first.
func HandOverPokedForTest(giver, taker *Mutex) (take func(ctx context.Context) (adopted bool, ended error)) {
	p := taker.proto(taker.owner)
	w := taker.c.handovers.queue(&call{p: p, mode: waitHandover, n: 1})
	taker.c.handovers.pokeFirst(p)
	giver.Unlock()
	return takeHandedForTest(taker, p, w)
}

// takeHandedForTest takes what was handed to the queued place w of taker's
// protocol p, as the waiting call would (see HandOverInFlightForTest).
func takeHandedForTest(taker *Mutex, p *protocol, w *place) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		select {
		case x := <-w.ch:
			if x.t == nil {
				err := errors.New("a wake-up was pending, not a hold")
				taker.c.leave(context.Background(), w, err)
				return false, err
			}
			if taker.c.adopt(ctx, &call{p: p, mode: waitHandover, n: 1}, x) {
				return true, nil
			}
			_, err := x.t.result()
			return false, err
		default:
			err := errors.New("nothing was handed over")
			taker.c.leave(context.Background(), w, err)
			return false, err
		}
	}
}

// BusyOwnerForTest keeps m's owner's calls on its lock waiting, as a call of
// the owner whose round trip to Redis is slow does, until release is called.
func BusyOwnerForTest(m *Mutex) (release func()) {
	p := m.proto(m.owner)
	h := m.c.holds.ref(p.key, orCreate)
	_ = h.op.Lock(context.Background())
	return func() {
		h.op.Unlock()
		m.c.holds.unref(h)
	}
}
