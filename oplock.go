package redisync

import (
	"context"
	"sync"
)

// An opLock serializes one owner's calls on one lock, as a mutex whose Lock
// takes a context. A call may hold it across a round trip to Redis, which a
// stalled connection can stretch to seconds; another call of the same owner
// waits for it only as long as its own context allows, and a TryLock does not
// wait at all. Waiters get it in arrival order. The zero value is unlocked.
type opLock struct {
	mu      sync.Mutex
	held    bool
	waiters []chan struct{} // closed to hand the lock to that waiter
}

// lock locks l, waiting until it is free or ctx is done. It returns ctx.Err()
// when ctx ends first, not holding l.
func (l *opLock) lock(ctx context.Context) error {
	l.mu.Lock()
	if !l.held {
		l.held = true
		l.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	l.waiters = append(l.waiters, ch)
	l.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	for i, w := range l.waiters {
		if w == ch {
			l.waiters = append(l.waiters[:i:i], l.waiters[i+1:]...)
			l.mu.Unlock()
			return ctx.Err()
		}
	}
	l.mu.Unlock()
	// Handed over just as ctx ended: pass it on.
	l.unlock()
	return ctx.Err()
}

// tryLock locks l if it is free and reports whether it did.
func (l *opLock) tryLock() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held {
		return false
	}
	l.held = true
	return true
}

// unlock unlocks l, handing it to the longest waiter if there is one.
func (l *opLock) unlock() {
	l.mu.Lock()
	if len(l.waiters) == 0 {
		l.held = false
		l.mu.Unlock()
		return
	}
	ch := l.waiters[0]
	l.waiters = l.waiters[1:]
	l.mu.Unlock()
	close(ch)
}
