package redisync

import (
	"context"
	"sync"
	"sync/atomic"
)

// An opLock serializes one owner's calls on one lock, as a mutex whose Lock
// takes a context. A call may hold it across a round trip to Redis, which a
// stalled connection can stretch to seconds; another call of the same owner
// waits for it only as long as its own context allows, and a TryLock does not
// wait at all. The zero value is unlocked.
//
// It is a sync.Mutex underneath, which callers without a deadline (Lock,
// Unlock) wait on directly, as cheaply as before contexts mattered. A caller
// whose context can end registers instead, and is told by every unlock to try
// again; it checks once more after registering, so that an unlock between its
// first try and its registration is not missed.
type opLock struct {
	mu      sync.Mutex
	wmu     sync.Mutex      // guards waiters
	waiters []chan struct{} // closed to tell a waiter to try again
	nwait   atomic.Int32    // len(waiters), read without wmu by unlock
}

// lock locks l, waiting until it is free or ctx is done. It returns ctx.Err()
// when ctx ends first, not holding l.
func (l *opLock) lock(ctx context.Context) error {
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

// tryLock locks l if it is free and reports whether it did.
func (l *opLock) tryLock() bool { return l.mu.TryLock() }

// unlock unlocks l and tells the longest-registered waiter to try again.
func (l *opLock) unlock() {
	l.mu.Unlock()
	if l.nwait.Load() > 0 {
		l.signal()
	}
}

// signal tells the longest-registered waiter, if any, to try again.
func (l *opLock) signal() {
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
func (l *opLock) forget(ch chan struct{}) bool {
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
