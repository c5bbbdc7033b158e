// Copyright 2011 The Go Authors and the redisync authors. Ported from Go's
// src/sync/waitgroup_test.go, used under its BSD-style license.

package conformance_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/go-redisync/redisync"
)

func newWaitGroup(c *redisync.Client, name string) *redisync.WaitGroup { return c.NewWaitGroup(name) }

// check reports the error of a WaitGroup call: sync's calls have none.
func check(t *testing.T, what string, err error) {
	if err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

// testWaitGroup is sync's, with wg1[i] and wg2[i] the handles of goroutine
// i, and those at n the test's own.
func testWaitGroup(t *testing.T, wg1 []*redisync.WaitGroup, wg2 []*redisync.WaitGroup) {
	ctx := context.Background()
	n := 16
	check(t, "Add", wg1[n].Add(ctx, int64(n)))
	check(t, "Add", wg2[n].Add(ctx, int64(n)))
	exited := make(chan bool, n)
	for i := 0; i != n; i++ {
		go func() {
			check(t, "Done", wg1[i].Done(ctx))
			check(t, "Wait", wg2[i].Wait(ctx))
			exited <- true
		}()
	}
	within(t, hang, "wg1.Wait", func() { check(t, "Wait", wg1[n].Wait(ctx)) })
	for i := 0; i != n; i++ {
		select {
		case <-exited:
			t.Fatal("WaitGroup released group too soon")
		default:
		}
		check(t, "Done", wg2[n].Done(ctx))
	}
	within(t, hang, "wg2.Wait", func() {
		for i := 0; i != n; i++ {
			<-exited // Will block if barrier fails to unlock someone.
		}
	})
}

// TestWaitGroup is sync's, on 17 handles of each of the two WaitGroups (16
// goroutines and the test), laid out as the layout says.
func TestWaitGroup(t *testing.T) {
	forEachLayout(t, func(t *testing.T, e *env, l layout) {
		wg1 := handles(e, l, 17, newWaitGroup)
		wg2 := handles(e, l, 17, newWaitGroup)

		// Run the same test a few times to ensure barrier is in a proper state.
		for i := 0; i != 8; i++ {
			testWaitGroup(t, wg1, wg2)
		}
	})
}

// TestWaitGroupMisuse is sync's but for an intended difference: sync panics
// when the counter would go negative; redisync, whose counter may be
// changed by other processes, returns an error: "If the counter would go
// below zero, Add changes nothing and returns an error wrapping
// [ErrNegativeCounter]" ([redisync.WaitGroup.Add]). The calls go through
// three handles, and the counter is checked to be left at zero.
func TestWaitGroupMisuse(t *testing.T) {
	forEachLayout(t, func(t *testing.T, e *env, l layout) {
		ctx := context.Background()
		wg := handles(e, l, 3, newWaitGroup)
		check(t, "Add", wg[0].Add(ctx, 1))
		check(t, "Done", wg[1].Done(ctx))
		if err := wg[2].Done(ctx); !errors.Is(err, redisync.ErrNegativeCounter) {
			t.Fatalf("Unexpected error: %#v", err)
		}
		if n, err := wg[0].Count(ctx); n != 0 || err != nil {
			t.Fatalf("counter after the refused Done: %d, %v; want 0", n, err)
		}
	})
}

// wgRaceLoops is TestWaitGroupRace's iterations: 1000 in sync ("about
// 1ms"), fewer here, where each is a few round trips to Redis.
const wgRaceLoops = 50

// TestWaitGroupRace is sync's: Wait does not return before both goroutines'
// Done. Each iteration has a WaitGroup of its own, as in sync, on the
// layout's handles (made by a maker per place).
func TestWaitGroupRace(t *testing.T) {
	forEachLayout(t, func(t *testing.T, e *env, l layout) {
		ctx := context.Background()
		makers := handles(e, l, 3, func(c *redisync.Client, _ string) func(string) *redisync.WaitGroup {
			made := make(map[string]*redisync.WaitGroup)
			return func(name string) *redisync.WaitGroup {
				if made[name] == nil {
					made[name] = c.NewWaitGroup(name)
				}
				return made[name]
			}
		})
		for i := 0; i < wgRaceLoops; i++ {
			name := e.name()
			wg := []*redisync.WaitGroup{makers[0](name), makers[1](name), makers[2](name)}
			n := new(int32)
			// spawn goroutine 1
			check(t, "Add", wg[0].Add(ctx, 1))
			go func() {
				atomic.AddInt32(n, 1)
				check(t, "Done", wg[1].Done(ctx))
			}()
			// spawn goroutine 2
			check(t, "Add", wg[0].Add(ctx, 1))
			go func() {
				atomic.AddInt32(n, 1)
				check(t, "Done", wg[2].Done(ctx))
			}()
			// Wait for goroutine 1 and 2
			within(t, hang, "Wait", func() { check(t, "Wait", wg[0].Wait(ctx)) })
			if atomic.LoadInt32(n) != 2 {
				t.Fatal("Spurious wakeup from Wait")
			}
		}
	})
}
