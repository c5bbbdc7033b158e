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
// whose context can end registers instead, and is told by every unlock to try
// again; it checks once more after registering, so that an unlock between its
// first try and its registration is not missed.
type Mutex struct {
	mu      sync.Mutex
	wmu     sync.Mutex      // guards waiters
	waiters []chan struct{} // closed to tell a waiter to try again
	nwait   atomic.Int32    // len(waiters), read without wmu by unlock
}

// Lock locks l, waiting until it is free or ctx is done. It returns ctx.Err()
// when ctx ends first, not holding l.
func (l *Mutex) Lock(ctx context.Context) error {
	if ctx.Done() == nil {
		l.mu.Lock()
		return nil
	}
	if l.mu.TryLock() {
		return nil
	}
	for {
		ch := make(chan struct{})
		l.wmu.Lock()
		l.waiters = append(l.waiters, ch)
		l.nwait.Add(1)
		l.wmu.Unlock()
		if l.mu.TryLock() {
			if !l.forget(ch) {
				l.signal() // told meanwhile: pass it on
			}
			return nil
		}
		select {
		case <-ch:
			if l.mu.TryLock() {
				return nil
			}
			// Another caller came first: register again.
		case <-ctx.Done():
			if !l.forget(ch) {
				l.signal() // told just now: pass it on
			}
			return ctx.Err()
		}
	}
}

// TryLock locks l if it is free and reports whether it did.
func (l *Mutex) TryLock() bool { return l.mu.TryLock() }

// Unlock unlocks l and tells the longest-registered waiter to try again.
func (l *Mutex) Unlock() {
	l.mu.Unlock()
	if l.nwait.Load() > 0 {
		l.signal()
	}
}

// signal tells the longest-registered waiter, if any, to try again.
func (l *Mutex) signal() {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if len(l.waiters) == 0 {
		return
	}
	ch := l.waiters[0]
	l.waiters = l.waiters[1:]
	l.nwait.Add(-1)
	close(ch)
}

// forget takes ch out of the waiters and reports whether it was there (not
// yet told to try again).
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
