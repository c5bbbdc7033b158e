package redisync

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A waiting call's local channel carries one thing at a time: a wake-up
// (the zero handover) or a hold. Wake-ups never block their sender and
// collapse into one; a hold replaces a pending wake-up and is never lost
// or blocked, whatever wakes the channel meanwhile.
func TestLocalChannel(t *testing.T) {
	local := make(chan handover, 1)
	wake(local)
	wake(local) // a second one while the first is pending: nothing more
	if x := <-local; x.t != nil {
		t.Fatal("a wake-up carried a hold")
	}
	select {
	case <-local:
		t.Fatal("two wake-ups pending: they should collapse into one")
	default:
	}

	held := &term{}
	wake(local)
	hand(local, handover{t: held, streak: 3})
	if x := <-local; x.t != held || x.streak != 3 {
		t.Fatalf("got %+v, want the hold handed over in place of the wake-up", x)
	}

	// Wake-ups from many goroutines while holds are handed: each hold
	// arrives, none blocks.
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				wake(local)
			}
		})
	}
	for i := range 1000 {
		handed := make(chan struct{})
		go func() {
			hand(local, handover{t: held, streak: i})
			close(handed)
		}()
		select {
		case <-handed:
		case <-time.After(10 * time.Second):
			t.Fatal("hand blocked behind wake-ups")
		}
		for x := range local { // wake-ups that came after the hold was taken are read too
			if x.t != nil {
				if x.streak != i {
					t.Fatalf("got hold %d, want %d", x.streak, i)
				}
				break
			}
		}
	}
	stop.Store(true)
	wg.Wait()
}

// The owner's waiting calls are woken when its hold ends, each once,
// however often a call registered; a call that returned is forgotten, so a
// long hold does not keep every call that waited for it meanwhile.
func TestHoldWakesWhenFree(t *testing.T) {
	var h hold
	var a, b, gone channelWait
	for _, c := range []*channelWait{&a, &b, &gone} {
		c.localChan()
	}
	h.setCount(1)
	h.wakeWhenFree(&gone)
	gone.returned.Store(true)
	h.wakeWhenFree(&a)
	h.wakeWhenFree(&a)
	h.wakeWhenFree(&b)
	if len(h.freeing) != 2 {
		t.Fatalf("%d registrations, want 2 (one per call still waiting)", len(h.freeing))
	}
	select {
	case <-a.local:
		t.Fatal("woken before the hold ended")
	default:
	}
	h.clear()
	for _, c := range []*channelWait{&a, &b} {
		select {
		case x := <-c.local:
			if x.t != nil {
				t.Fatal("the end of a hold handed a hold")
			}
		default:
			t.Fatal("a waiting call was not woken when its owner's hold ended")
		}
	}
	if len(h.freeing) != 0 {
		t.Fatal("the registrations outlived the hold")
	}
}
