// Copyright 2011 The Go Authors and the redisync authors. Ported from Go's
// src/sync/cond_test.go, used under its BSD-style license.

//lint:file-ignore SA2001 Go's tests lock and unlock with nothing between on purpose: the lock is what they test.

package conformance_test

import (
	"runtime"
	"sync"
	"testing"
)

// These are sync's tests of Cond, with a redisync lock of each kind as the
// Cond's Locker. sync's goroutines may outlive its tests; these are waited
// for before the test returns, since its Clients are closed then and a Lock
// on a closed Client panics.

// A rotating lock is a sync.Locker on the handles of a layout: a Cond has
// one Locker, which every goroutine locks, so each Lock takes the next
// handle and the matching Unlock, by whoever holds the lock then, goes
// through the handle that locked it.
type rotating struct {
	hs []locker

	mu   sync.Mutex
	next int
	held locker
}

func (r *rotating) Lock() {
	r.mu.Lock()
	h := r.hs[r.next%len(r.hs)]
	r.next++
	r.mu.Unlock()
	h.Lock()
	r.mu.Lock()
	r.held = h
	r.mu.Unlock()
}

func (r *rotating) Unlock() {
	r.mu.Lock()
	h := r.held
	r.held = nil
	r.mu.Unlock()
	h.Unlock()
}

// condLocker returns the Locker of a Cond used by n goroutines: the one
// handle of the shared layout, else a rotating lock on n handles.
func condLocker(e *env, l layout, k lockKind, n int) sync.Locker {
	hs := handles(e, l, n, k.make)
	if l.name == "shared" {
		return hs[0]
	}
	return &rotating{hs: hs}
}

func TestCondSignal(t *testing.T) {
	forEachLock(t, func(t *testing.T, e *env, l layout, k lockKind) {
		n := 2
		m := condLocker(e, l, k, n+1)
		c := sync.NewCond(m)
		running := make(chan bool, n)
		awake := make(chan bool, n)
		var wg sync.WaitGroup
		defer within(t, hang, "the goroutines' exit", wg.Wait)
		for i := 0; i < n; i++ {
			wg.Go(func() {
				m.Lock()
				running <- true
				c.Wait()
				awake <- true
				m.Unlock()
			})
		}
		for i := 0; i < n; i++ {
			within(t, hang, "running", func() { <-running }) // Wait for everyone to run.
		}
		for n > 0 {
			select {
			case <-awake:
				t.Fatal("goroutine not asleep")
			default:
			}
			m.Lock()
			c.Signal()
			m.Unlock()
			within(t, hang, "awake", func() { <-awake }) // Will deadlock if no goroutine wakes up
			select {
			case <-awake:
				t.Fatal("too many goroutines awake")
			default:
			}
			n--
		}
		c.Signal()
	})
}

// TestCondSignalGenerations is sync's with 10 goroutines (100 in sync).
func TestCondSignalGenerations(t *testing.T) {
	forEachLock(t, func(t *testing.T, e *env, l layout, k lockKind) {
		n := 10
		m := condLocker(e, l, k, n+1)
		c := sync.NewCond(m)
		running := make(chan bool, n)
		awake := make(chan int, n)
		var wg sync.WaitGroup
		defer within(t, hang, "the goroutines' exit", wg.Wait)
		for i := 0; i < n; i++ {
			wg.Go(func() {
				m.Lock()
				running <- true
				c.Wait()
				awake <- i
				m.Unlock()
			})
			if i > 0 {
				var a int
				within(t, hang, "awake", func() { a = <-awake })
				if a != i-1 {
					t.Fatalf("wrong goroutine woke up: want %d, got %d", i-1, a)
				}
			}
			within(t, hang, "running", func() { <-running })
			m.Lock()
			c.Signal()
			m.Unlock()
		}
	})
}

// TestCondBroadcast is sync's with 5 goroutines (200 in sync): each round
// wakes all of them, and every one takes the lock again.
func TestCondBroadcast(t *testing.T) {
	forEachLock(t, func(t *testing.T, e *env, l layout, k lockKind) {
		n := 5
		m := condLocker(e, l, k, n+1)
		c := sync.NewCond(m)
		running := make(chan int, n)
		awake := make(chan int, n)
		exit := false
		var wg sync.WaitGroup
		defer within(t, hang, "the goroutines' exit", wg.Wait)
		for i := 0; i < n; i++ {
			g := i
			wg.Go(func() {
				m.Lock()
				for !exit {
					running <- g
					c.Wait()
					awake <- g
				}
				m.Unlock()
			})
		}
		for i := 0; i < n; i++ {
			for i := 0; i < n; i++ {
				within(t, hang, "running", func() { <-running }) // Will deadlock unless n are running.
			}
			if i == n-1 {
				m.Lock()
				exit = true
				m.Unlock()
			}
			select {
			case <-awake:
				t.Fatal("goroutine not asleep")
			default:
			}
			m.Lock()
			c.Broadcast()
			m.Unlock()
			seen := make([]bool, n)
			for i := 0; i < n; i++ {
				var g int
				within(t, hang, "awake", func() { g = <-awake })
				if seen[g] {
					t.Fatal("goroutine woke up twice")
				}
				seen[g] = true
			}
		}
		select {
		case <-running:
			t.Fatal("goroutine did not exit")
		default:
		}
		c.Broadcast()
	})
}

// TestRace is sync's: x is read and written only under the lock, and the
// race detector must see the Cond's Wait and the lock order those accesses.
func TestRace(t *testing.T) {
	forEachLock(t, func(t *testing.T, e *env, l layout, k lockKind) {
		x := 0
		c := sync.NewCond(condLocker(e, l, k, 3))
		done := make(chan bool)
		go func() {
			c.L.Lock()
			x = 1
			c.Wait()
			if x != 2 {
				t.Error("want 2")
			}
			x = 3
			c.Signal()
			c.L.Unlock()
			done <- true
		}()
		go func() {
			c.L.Lock()
			for {
				if x == 1 {
					x = 2
					c.Signal()
					break
				}
				c.L.Unlock()
				runtime.Gosched()
				c.L.Lock()
			}
			c.L.Unlock()
			done <- true
		}()
		go func() {
			c.L.Lock()
			for {
				if x == 2 {
					c.Wait()
					if x != 3 {
						t.Error("want 3")
					}
					break
				}
				if x == 3 {
					break
				}
				c.L.Unlock()
				runtime.Gosched()
				c.L.Lock()
			}
			c.L.Unlock()
			done <- true
		}()
		within(t, hang, "done", func() {
			<-done
			<-done
			<-done
		})
	})
}

// condStealingLoops is TestCondSignalStealing's iterations: 1000 in sync.
const condStealingLoops = 5

// TestCondSignalStealing is sync's, but for its loops, and the lock, which
// is made once for all of them (with a new Cond in each as in sync): sync
// makes a Mutex per loop, which here would be new Clients per loop.
func TestCondSignalStealing(t *testing.T) {
	forEachLock(t, func(t *testing.T, e *env, l layout, k lockKind) {
		m := condLocker(e, l, k, 3)
		for iters := 0; iters < condStealingLoops; iters++ {
			cond := sync.NewCond(m)
			var wg sync.WaitGroup

			// Start a waiter.
			ch := make(chan struct{})
			wg.Go(func() {
				m.Lock()
				ch <- struct{}{}
				cond.Wait()
				m.Unlock()

				ch <- struct{}{}
			})

			within(t, hang, "the first waiter", func() { <-ch })
			m.Lock()
			m.Unlock()

			// We know that the waiter is in the cond.Wait() call because we
			// synchronized with it, then acquired/released the mutex it was
			// holding when we synchronized.
			//
			// Start two goroutines that will race: one will broadcast on
			// the cond var, the other will wait on it.
			//
			// The new waiter may or may not get notified, but the first one
			// has to be notified.
			done := false
			wg.Go(func() {
				cond.Broadcast()
			})

			wg.Go(func() {
				m.Lock()
				for !done {
					cond.Wait()
				}
				m.Unlock()
			})

			// Check that the first waiter does get signaled.
			within(t, hang, "the first waiter's wake-up", func() { <-ch })

			// Release the second waiter in case it didn't get the
			// broadcast.
			m.Lock()
			done = true
			m.Unlock()
			cond.Broadcast()
			within(t, hang, "the goroutines' exit", wg.Wait)
		}
	})
}
