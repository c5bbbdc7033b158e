// Copyright 2009 The Go Authors and the redisync authors. Ported from Go's
// src/sync/rwmutex_test.go, used under its BSD-style license.

package conformance_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redisync/redisync"
)

func newRWMutex(c *redisync.Client, name string) *redisync.RWMutex { return c.NewRWMutex(name) }

// apart returns l with the goroutines that writer picks moved to handles
// that no reader uses: writers share handles among themselves as l says,
// readers among themselves, but a writer never shares one with a reader.
// That is redisync's rule, not sync's: a handle is one owner, and "Lock
// panics if the handle's own reads are held (an upgrade)"
// ([redisync.RWMutex.Lock]); the type's doc says "Give a writer that works
// alongside readers its own handle".
func apart(l layout, writer func(g int) bool) layout {
	place := l.place
	l.place = func(g, n int) (int, int) {
		c, k := place(g, n)
		if writer(g) {
			k += 1 << 20 // beyond every reader's key, which is in [-1, n)
		}
		return c, k
	}
	return l
}

func parallelReader(m *redisync.RWMutex, clocked, cunlock, cdone chan bool) {
	m.RLock()
	clocked <- true
	<-cunlock
	m.RUnlock()
	cdone <- true
}

func doTestParallelReaders(t *testing.T, e *env, l layout, numReaders, gomaxprocs int) {
	runtime.GOMAXPROCS(gomaxprocs)
	ms := handles(e, l, numReaders, newRWMutex)
	clocked := make(chan bool)
	cunlock := make(chan bool)
	cdone := make(chan bool)
	for i := 0; i < numReaders; i++ {
		go parallelReader(ms[i], clocked, cunlock, cdone)
	}
	within(t, hang, "parallel RLock", func() {
		// Wait for all parallel RLock()s to succeed.
		for i := 0; i < numReaders; i++ {
			<-clocked
		}
		for i := 0; i < numReaders; i++ {
			cunlock <- true
		}
		// Wait for the goroutines to finish.
		for i := 0; i < numReaders; i++ {
			<-cdone
		}
	})
}

// TestParallelReaders is sync's: numReaders goroutines hold the read lock
// at once, whether they share a handle (whose reads are counted together)
// or not.
func TestParallelReaders(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(-1))
	forEachLayout(t, func(t *testing.T, e *env, l layout) {
		doTestParallelReaders(t, e, l, 1, 4)
		doTestParallelReaders(t, e, l, 3, 4)
		doTestParallelReaders(t, e, l, 4, 2)
	})
}

// sectionWork is the work of reader's and writer's critical sections:
// sync's is a loop of 100 empty iterations, nanoseconds against sections
// here begun and ended by round trips to Redis, so short that holders
// wrongly let in together would hardly ever overlap inside them.
const sectionWork = 100 * time.Microsecond

// reader and writer are sync's, except that a broken exclusion is reported
// with t.Errorf where sync panics (a panic in a goroutine would end the run
// without stopping the suite's servers), and for their sections' work.
func reader(t *testing.T, rwm *redisync.RWMutex, num_iterations int, activity *int32, cdone chan bool) {
	for i := 0; i < num_iterations; i++ {
		rwm.RLock()
		n := atomic.AddInt32(activity, 1)
		if n < 1 || n >= 10000 {
			t.Errorf("wlock(%d)", n)
		}
		time.Sleep(sectionWork)
		atomic.AddInt32(activity, -1)
		rwm.RUnlock()
	}
	cdone <- true
}

func writer(t *testing.T, rwm *redisync.RWMutex, num_iterations int, activity *int32, cdone chan bool) {
	for i := 0; i < num_iterations; i++ {
		rwm.Lock()
		n := atomic.AddInt32(activity, 10000)
		if n != 10000 {
			t.Errorf("wlock(%d)", n)
		}
		time.Sleep(sectionWork)
		atomic.AddInt32(activity, -10000)
		rwm.Unlock()
	}
	cdone <- true
}

// HammerRWMutex is sync's, with the goroutines, in the order sync starts
// them (a writer, half the readers, a writer, the other readers), on
// handles of l with the writers apart.
func HammerRWMutex(t *testing.T, e *env, l layout, gomaxprocs, numReaders, num_iterations int) {
	runtime.GOMAXPROCS(gomaxprocs)
	isWriter := func(g int) bool { return g == 0 || g == numReaders/2+1 }
	ms := handles(e, apart(l, isWriter), 2+numReaders, newRWMutex)
	// Number of active readers + 10000 * number of active writers.
	var activity int32
	cdone := make(chan bool)
	g := 0
	next := func() *redisync.RWMutex { g++; return ms[g-1] }
	go writer(t, next(), num_iterations, &activity, cdone)
	var i int
	for i = 0; i < numReaders/2; i++ {
		go reader(t, next(), num_iterations, &activity, cdone)
	}
	go writer(t, next(), num_iterations, &activity, cdone)
	for ; i < numReaders; i++ {
		go reader(t, next(), num_iterations, &activity, cdone)
	}
	within(t, hang, "HammerRWMutex", func() {
		// Wait for the 2 writers and all readers to finish.
		for i := 0; i < 2+numReaders; i++ {
			<-cdone
		}
	})
}

// rwHammerLoops is HammerRWMutex's iterations: 1000 in sync (5 with
// -short), 5 here too, since every one is a round trip to Redis and the
// suite runs on three topologies in four layouts.
const rwHammerLoops = 5

// TestRWMutex is sync's. The TryLock checks use two handles, which are one
// in the shared layout: a second TryRLock through a handle that holds the
// read lock succeeds (its reads are counted together), and TryLock through
// it fails as sync's does (the upgrade is refused, not waited for).
func TestRWMutex(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(-1))
	forEachLayout(t, func(t *testing.T, e *env, l layout) {
		ms := handles(e, l, 2, newRWMutex)
		m := ms[0]

		m.Lock()
		if ms[1].TryLock() {
			t.Fatalf("TryLock succeeded with mutex locked")
		}
		if ms[1].TryRLock() {
			t.Fatalf("TryRLock succeeded with mutex locked")
		}
		m.Unlock()

		if !m.TryLock() {
			t.Fatalf("TryLock failed with mutex unlocked")
		}
		m.Unlock()

		if !m.TryRLock() {
			t.Fatalf("TryRLock failed with mutex unlocked")
		}
		if !ms[1].TryRLock() {
			t.Fatalf("TryRLock failed with mutex rlocked")
		}
		if m.TryLock() {
			t.Fatalf("TryLock succeeded with mutex rlocked")
		}
		m.RUnlock()
		ms[1].RUnlock()

		n := rwHammerLoops
		HammerRWMutex(t, e, l, 1, 1, n)
		HammerRWMutex(t, e, l, 1, 3, n)
		HammerRWMutex(t, e, l, 1, 10, n)
		HammerRWMutex(t, e, l, 4, 1, n)
		HammerRWMutex(t, e, l, 4, 3, n)
		HammerRWMutex(t, e, l, 4, 10, n)
		HammerRWMutex(t, e, l, 10, 1, n)
		HammerRWMutex(t, e, l, 10, 3, n)
		HammerRWMutex(t, e, l, 10, 10, n)
		HammerRWMutex(t, e, l, 10, 5, n)
	})
}

// TestRLocker is sync's, but wl and rl are two handles on one RWMutex where
// sync has one RWMutex: after rl.Lock, wl.Lock through the same handle would
// be an upgrade, which redisync refuses with a panic ("Lock panics if the
// handle's own reads are held (an upgrade)", [redisync.RWMutex.Lock]) where
// sync waits for the reads to end. With two handles, wl.Lock waits for both
// of rl's read holds as sync's does, on every layout (the two handles are on
// one Client in the first two, on two Clients in the others).
func TestRLocker(t *testing.T) {
	forEachLayout(t, func(t *testing.T, e *env, l layout) {
		ms := handles(e, apart(l, func(g int) bool { return g == 1 }), 2, newRWMutex)
		wl := ms[1]
		var rl sync.Locker
		wlocked := make(chan bool, 1)
		rlocked := make(chan bool, 1)
		rl = ms[0].RLocker()
		n := 10
		go func() {
			for i := 0; i < n; i++ {
				rl.Lock()
				rl.Lock()
				rlocked <- true
				wl.Lock()
				wlocked <- true
			}
		}()
		for i := 0; i < n; i++ {
			within(t, hang, "rl.Lock", func() { <-rlocked })
			rl.Unlock()
			select {
			case <-wlocked:
				t.Fatal("RLocker() didn't read-lock it")
			default:
			}
			rl.Unlock()
			within(t, hang, "wl.Lock", func() { <-wlocked })
			select {
			case <-rlocked:
				t.Fatal("RLocker() didn't respect the write lock")
			default:
			}
			wl.Unlock()
		}
	})
}
