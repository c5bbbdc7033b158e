// Copyright 2009 The Go Authors and the redisync authors. Ported from Go's
// src/sync/mutex_test.go, used under its BSD-style license.

//lint:file-ignore SA2001 Go's tests lock and unlock with nothing between on purpose: the lock is what they test.

package conformance_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-redisync/redisync"
)

// hammerLoops is HammerMutex's loops per goroutine: 1000 in sync, fewer here
// to keep the run short (each loop is a round trip to Redis or a handover).
const hammerLoops = 100

func HammerMutex(m locker, loops int, cdone chan bool) {
	for i := 0; i < loops; i++ {
		if i%3 == 0 {
			if m.TryLock() {
				m.Unlock()
			}
			continue
		}
		m.Lock()
		m.Unlock()
	}
	cdone <- true
}

// TestMutex is sync's: TryLock fails on a locked lock and succeeds on an
// unlocked one, then 10 goroutines hammer it, a third of their loops with
// TryLock. Every goroutine must finish: one whose Lock never returns (a hold
// handed to nobody) is a deadlock. sync's mutex profile rate is left out.
func TestMutex(t *testing.T) {
	forEachLock(t, func(t *testing.T, e *env, l layout, k lockKind) {
		ms := handles(e, l, 10, k.make)
		m := ms[0]

		m.Lock()
		if ms[1].TryLock() {
			t.Fatalf("TryLock succeeded with mutex locked")
		}
		m.Unlock()
		if !m.TryLock() {
			t.Fatalf("TryLock failed with mutex unlocked")
		}
		m.Unlock()

		c := make(chan bool)
		for i := 0; i < 10; i++ {
			go HammerMutex(ms[i], hammerLoops, c)
		}
		within(t, hang, "HammerMutex", func() {
			for i := 0; i < 10; i++ {
				<-c
			}
		})
	})
}

// misuseTests are sync's, on redisync's locks. sync's misuse is a fatal
// error that its test observes in a child process; redisync panics instead
// (recoverably), with a message that also names the unlocked lock: "It is a
// run-time error, and Unlock panics, if m is not locked by its own owner in
// this process" ([redisync.Mutex.Unlock]).
var misuseTests = []struct {
	name string
	f    func(c *redisync.Client, name string)
}{
	{"Mutex.Unlock", func(c *redisync.Client, name string) {
		mu := c.NewMutex(name)
		mu.Unlock()
	}},
	{"Mutex.Unlock2", func(c *redisync.Client, name string) {
		mu := c.NewMutex(name)
		mu.Lock()
		mu.Unlock()
		mu.Unlock()
	}},
	{"FencedMutex.Unlock2", func(c *redisync.Client, name string) {
		mu := c.NewFencedMutex(name)
		mu.Lock()
		mu.Unlock()
		mu.Unlock()
	}},
	{"FairMutex.Unlock2", func(c *redisync.Client, name string) {
		mu := c.NewFairMutex(name)
		mu.Lock()
		mu.Unlock()
		mu.Unlock()
	}},
	{"MultiMutex.Unlock2", func(c *redisync.Client, name string) {
		mu := c.NewMultiMutex([]string{name + ":a", name + ":b"})
		mu.Lock()
		mu.Unlock()
		mu.Unlock()
	}},
	{"RWMutex.Unlock", func(c *redisync.Client, name string) {
		mu := c.NewRWMutex(name)
		mu.Unlock()
	}},
	{"RWMutex.Unlock2", func(c *redisync.Client, name string) {
		mu := c.NewRWMutex(name)
		mu.RLock()
		mu.Unlock()
	}},
	{"RWMutex.Unlock3", func(c *redisync.Client, name string) {
		mu := c.NewRWMutex(name)
		mu.Lock()
		mu.Unlock()
		mu.Unlock()
	}},
	{"RWMutex.RUnlock", func(c *redisync.Client, name string) {
		mu := c.NewRWMutex(name)
		mu.RUnlock()
	}},
	{"RWMutex.RUnlock2", func(c *redisync.Client, name string) {
		mu := c.NewRWMutex(name)
		mu.Lock()
		mu.RUnlock()
	}},
	{"RWMutex.RUnlock3", func(c *redisync.Client, name string) {
		mu := c.NewRWMutex(name)
		mu.RLock()
		mu.RUnlock()
		mu.RUnlock()
	}},
}

func TestMutexMisuse(t *testing.T) {
	forEachTopology(t, func(t *testing.T, e *env) {
		c := e.client()
		for _, test := range misuseTests {
			out := func() (msg string) {
				defer func() { msg = fmt.Sprint(recover()) }()
				test.f(c, e.name())
				return "no panic"
			}()
			if !strings.Contains(out, "unlocked") {
				t.Errorf("%s: did not find failure with message about unlocked lock: %s", test.name, out)
			}
		}
	})
}

// TestMutexFairness is sync's: a goroutine that loops Lock, a 100 µs
// section, Unlock must not keep another, which wants the lock 10 times, out
// for 10 s. In sync the second gets in by starvation mode; here, on every
// layout (the two goroutines on one handle too), a goroutine that waits is
// not overtaken by its Client's newcomers, and across Clients the lock's
// waiters are served in turn.
func TestMutexFairness(t *testing.T) {
	forEachLock(t, func(t *testing.T, e *env, l layout, k lockKind) {
		ms := handles(e, l, 2, k.make)
		mu := ms[0]
		stop := make(chan bool)
		stopped := make(chan bool)
		defer func() {
			close(stop)
			<-stopped
		}()
		go func() {
			defer close(stopped)
			for {
				mu.Lock()
				time.Sleep(100 * time.Microsecond)
				mu.Unlock()
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
		done := make(chan bool, 1)
		go func() {
			for i := 0; i < 10; i++ {
				time.Sleep(100 * time.Microsecond)
				ms[1].Lock()
				ms[1].Unlock()
			}
			done <- true
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("can't acquire Mutex in 10 seconds")
		}
	})
}
