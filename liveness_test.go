//lint:file-ignore SA2001 the hammer locks and unlocks with nothing between on purpose, as Go's HammerMutex does.

package redisync_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"
)

// A Locker with TryLock, as every exclusive lock handle is.
type tryLocker interface {
	sync.Locker
	TryLock() bool
}

// hammerTry is Go's HammerMutex: loops of Lock and Unlock, a third of them
// a TryLock instead.
func hammerTry(m tryLocker, loops int) {
	for i := range loops {
		if i%3 == 0 {
			if m.TryLock() {
				m.Unlock()
			}
			continue
		}
		m.Lock()
		m.Unlock()
	}
}

// The smallest shape of a deadlock the engine once had for good: two
// goroutines share a handle on one Client, a third locks through another
// Client, and a third of the loops are TryLocks. A call woken by something
// other than a handover left its place in the handle's handover queue
// behind, a later Unlock handed the hold to that place, which nobody read,
// and every process was locked out while the holder lived (1 run in 20-40).
// Every round must finish: a hold goes only to a call waiting for it.
func TestSharedHandleTryLockNoDeadlock(t *testing.T) {
	a, _ := newClient(t, standalone)
	b, _ := newClient(t, standalone)
	rounds := 60
	if !standalone.Real() {
		rounds = 15 // a round takes about a second on miniredis, 100 ms on a server
	}
	base := freshName(t)
	for round := range rounds {
		name := base + ":" + strconv.Itoa(round)
		shared, other := a.NewMutex(name), b.NewMutex(name)
		var wg sync.WaitGroup
		for _, m := range []tryLocker{shared, shared, other} {
			wg.Go(func() { hammerTry(m, 30) })
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(hang):
			held, _ := shared.IsLocked(context.Background())
			t.Fatalf("round %d: the goroutines are blocked in Lock for good (locked in Redis: %v)", round, held)
		}
	}
}
