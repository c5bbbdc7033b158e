// Package ctxlock provides a mutex whose Lock takes a context.
package ctxlock

import (
	"context"
	"sync"
	"sync/atomic"
)

// A Mutex is a mutual exclusion lock whose Lock takes a context: a caller
// waits for it only as long as its context allows. redisync serializes one
// owner's calls on one lock with it; a call may hold it across a round trip
// to Redis, which a stalled connection can stretch to seconds. The zero value
// is unlocked.
//
// It is a sync.Mutex underneath, which callers without a deadline (Lock,
// Unlock) wait on directly, as cheaply as before contexts mattered. A caller
// whose context can end registers instead, and an unlock that finds one
// registered hands the lock to the longest-registered one without unlocking
// it in between: a loop of TryLock and Unlock (a TryAcquire loop through one
// handle) cannot keep it from a registered caller, who would otherwise be
// told to try again and lose to the loop's next TryLock every time.
type Mutex struct {
	mu      sync.Mutex
	wmu     sync.Mutex      // guards waiters
	waiters []chan struct{} // closed to hand the lock to a waiter
	nwait   atomic.Int32    // len(waiters), read without wmu by unlock
}

// Lock locks l, waiting until it is free or ctx is done. It returns ctx.Err()
// when ctx ends first, not holding l.
func (l *Mutex) Lock(ctx context.Context) error {
	if ctx.Done() == nil {
		l.mu.Lock()
		return nil
	}
	if l.nwait.Load() == 0 && l.mu.TryLock() {
		return nil
	}
	ch := make(chan struct{})
	l.wmu.Lock()
	l.waiters = append(l.waiters, ch)
	l.nwait.Add(1)
	l.wmu.Unlock()
	// An unlock that saw no waiter just before the registration left l
	// unlocked: take it, passing it to the first waiter if that is not us.
	if l.mu.TryLock() {
		l.pass()
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		if !l.forget(ch) {
			l.Unlock() // handed to us just now: pass it on
		}
		return ctx.Err()
	}
}

// TryLock locks l if it is free and nobody is registered for it, and reports
// whether it did.
func (l *Mutex) TryLock() bool { return l.nwait.Load() == 0 && l.mu.TryLock() }

// Unlock unlocks l, or hands it to the longest-registered waiter.
func (l *Mutex) Unlock() {
	if l.nwait.Load() > 0 {
		l.pass()
		return
	}
	l.mu.Unlock()
	// A caller that registered after the check, and whose TryLock came
	// before the unlock, waits: take l back to hand it over.
	if l.nwait.Load() > 0 && l.mu.TryLock() {
		l.pass()
	}
}

// pass hands l, which the caller holds, to the longest-registered waiter,
// or unlocks it when there is none.
func (l *Mutex) pass() {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if len(l.waiters) == 0 {
		l.mu.Unlock()
		return
	}
	ch := l.waiters[0]
	l.waiters = l.waiters[1:]
	l.nwait.Add(-1)
	close(ch)
}

// forget takes ch out of the waiters and reports whether it was there (not
// yet handed the lock).
func (l *Mutex) forget(ch chan struct{}) bool {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	for i, w := range l.waiters {
		if w == ch {
			l.waiters = append(l.waiters[:i:i], l.waiters[i+1:]...)
			l.nwait.Add(-1)
			return true
		}
	}
	return false
}
