// Copyright 2009 The Go Authors and the redisync authors. The tests of this
// package are ported from Go's src/sync and golang.org/x/sync/semaphore,
// used under their BSD-style license.

package conformance_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/redisserver"
	"github.com/go-redisync/redisync/internal/redistest"
)

func TestMain(m *testing.M) {
	os.Exit(redistest.Run(m, func() error { return nil }, stopServers))
}

// A topology is a kind of server the suite runs on, started on first use.
type topology struct {
	name  string
	start func() (*redisserver.Target, error)

	once   sync.Once
	target *redisserver.Target
	err    error
}

var topologies = []*topology{
	{name: "standalone", start: func() (*redisserver.Target, error) { return redisserver.StartStandalone() }},
	{name: "cluster", start: func() (*redisserver.Target, error) { return redisserver.StartClusterTarget(3, 0) }},
	{name: "sentinel", start: redisserver.StartSentinelTarget},
}

func stopServers() {
	for _, tp := range topologies {
		if tp.target != nil {
			_ = tp.target.Stop()
		}
	}
}

// chosen reports whether the topology called name is to be run.
func chosen(name string) bool {
	list := os.Getenv("REDISYNC_CONFORMANCE_TOPOLOGIES")
	if list == "" {
		return true
	}
	return slices.Contains(strings.Split(list, ","), name)
}

// An env is one topology's server, for one test.
type env struct {
	t  *testing.T
	tg *redisserver.Target
}

// forEachTopology runs test on every chosen topology.
func forEachTopology(t *testing.T, test func(t *testing.T, e *env)) {
	for _, tp := range topologies {
		if !chosen(tp.name) {
			continue
		}
		t.Run(tp.name, func(t *testing.T) {
			tp.once.Do(func() { tp.target, tp.err = tp.start() })
			if tp.err != nil {
				if redisserver.RequireServer() {
					t.Fatal(tp.err)
				}
				t.Skip(tp.err)
			}
			if !tp.target.Real() {
				// On miniredis, whose scripts run in an interpreter, Go's
				// hammer loops over every layout and lock kind take minutes.
				t.Skip("the conformance suite runs on a real redis-server; " + redisserver.InstallHint)
			}
			test(t, &env{t: t, tg: tp.target})
		})
	}
}

// client returns a new Client on its own connections, closed at the end of
// the test.
func (e *env) client() *redisync.Client {
	e.t.Helper()
	rc, err := e.tg.NewClient()
	if err != nil {
		e.t.Fatal(err)
	}
	c, err := redisync.New(rc, redisync.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		if e.t.Failed() {
			// A goroutine of a failed test may still be blocked in Lock, which
			// would panic on a closed Client and end the run: leave it (the
			// leak check reports it after the other tests).
			return
		}
		_ = c.Close()
		rc.Close()
	})
	return c
}

// lastName makes every name of the run unique: -cpu 1,2 and -count run a
// test again in the same process, on the same servers, and a Once or a
// WaitGroup keeps its state in Redis.
var lastName atomic.Uint64

// name returns a lock name of its own for the test.
func (e *env) name() string {
	return fmt.Sprintf("conformance:%s:%d", e.t.Name(), lastName.Add(1))
}

// A layout says which handle each of a test's goroutines uses.
type layout struct {
	name string
	// clients is how many Clients the handles are spread over.
	clients int
	// place returns, for goroutine g of n, its Client and a key: goroutines
	// with the same Client and key share a handle.
	place func(g, n int) (client, key int)
}

var layouts = []layout{
	{"shared", 1, func(int, int) (int, int) { return 0, 0 }},
	{"own", 1, func(g, _ int) (int, int) { return 0, g }},
	{"clients", 3, func(g, _ int) (int, int) { return g % 3, g }},
	// Two Clients; on each, the first three of every five goroutines share
	// a handle and the others have their own.
	{"mixed", 2, func(g, _ int) (int, int) {
		if (g/2)%5 < 3 {
			return g % 2, -1
		}
		return g % 2, g
	}},
}

// forEachLayout runs test for every layout on every chosen topology.
func forEachLayout(t *testing.T, test func(t *testing.T, e *env, l layout)) {
	forEachTopology(t, func(t *testing.T, e *env) {
		for _, l := range layouts {
			t.Run(l.name, func(t *testing.T) { test(t, &env{t: t, tg: e.tg}, l) })
		}
	})
}

// handles returns the handles of n goroutines laid out as l says, made by
// mk on a name of the test's.
func handles[H any](e *env, l layout, n int, mk func(c *redisync.Client, name string) H) []H {
	name := e.name()
	clients := make([]*redisync.Client, l.clients)
	for i := range clients {
		clients[i] = e.client()
	}
	type place struct{ client, key int }
	made := make(map[place]H)
	out := make([]H, n)
	for g := range out {
		c, k := l.place(g, n)
		p := place{c, k}
		h, ok := made[p]
		if !ok {
			h = mk(clients[c], name)
			made[p] = h
		}
		out[g] = h
	}
	return out
}

// A locker is what the lock kinds have in common with sync.Mutex.
type locker interface {
	sync.Locker
	TryLock() bool
}

// A lockKind makes handles of one kind of lock.
type lockKind struct {
	name string
	make func(c *redisync.Client, name string) locker
}

// rwWriter is an RWMutex's write side as a locker.
type rwWriter struct{ *redisync.RWMutex }

var lockKinds = []lockKind{
	{"Mutex", func(c *redisync.Client, name string) locker { return c.NewMutex(name) }},
	{"FencedMutex", func(c *redisync.Client, name string) locker { return c.NewFencedMutex(name) }},
	{"FairMutex", func(c *redisync.Client, name string) locker { return c.NewFairMutex(name) }},
	{"RWMutex", func(c *redisync.Client, name string) locker { return rwWriter{c.NewRWMutex(name)} }},
	{"MultiMutex", func(c *redisync.Client, name string) locker {
		return c.NewMultiMutex([]string{name + ":a", name + ":b"})
	}},
}

// forEachLock runs test for every lock kind in every layout on every chosen
// topology.
func forEachLock(t *testing.T, test func(t *testing.T, e *env, l layout, k lockKind)) {
	for _, k := range lockKinds {
		t.Run(k.name, func(t *testing.T) {
			forEachLayout(t, func(t *testing.T, e *env, l layout) { test(t, e, l, k) })
		})
	}
}

// within runs f and fails the test if it has not returned after d: where a
// sync test would block for good (a deadlock), this one reports it.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s: still blocked after %v (a deadlock or a starved goroutine)", what, d)
	}
}

// hang bounds a test that would block forever in sync if it deadlocked: far
// beyond what any of them takes when it works.
const hang = 60 * time.Second

var _ = context.Background
