package redisync

import (
	"errors"
	"fmt"
)

// Errors returned by the primitives. Errors about one lock wrap these with the
// lock's name, so test them with [errors.Is].
var (
	// ErrNotHeld is returned when a caller releases a lock it does not hold.
	ErrNotHeld = errors.New("redisync: lock not held")
	// ErrLockLost reports that a hold ended without being released: its lease
	// ran out, or Redis no longer had it (expired, deleted, or force-unlocked).
	ErrLockLost = errors.New("redisync: lock lost")
	// ErrClosed is returned by calls on a closed [Client], and ends holds that
	// were still held when it was closed.
	ErrClosed = errors.New("redisync: client closed")
	// ErrUpgrade is returned when an owner that holds an [RWMutex]'s read lock
	// asks for its write lock: it would wait for its own read hold forever.
	ErrUpgrade = errors.New("redisync: read lock held: upgrading to the write lock would deadlock")
)

// lockError wraps err with the name of the lock it is about.
func lockError(name string, err error) error {
	return fmt.Errorf("redisync: lock %q: %w", name, err)
}

// lostError reports the loss of the hold on name, for the given cause.
func lostError(name string, cause error) error {
	return fmt.Errorf("redisync: lock %q: %w: %v", name, ErrLockLost, cause)
}
