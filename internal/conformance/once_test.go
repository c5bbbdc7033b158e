// Copyright 2009 The Go Authors and the redisync authors. Ported from Go's
// src/sync/once_test.go, used under its BSD-style license.

package conformance_test

import (
	"context"
	"testing"

	"github.com/go-redisync/redisync"
)

func newOnce(c *redisync.Client, name string) *redisync.Once { return c.NewOnce(name) }

type one int

func (o *one) Increment() {
	*o++
}

func run(t *testing.T, once *redisync.Once, o *one, c chan bool) {
	if err := once.Do(context.Background(), func(context.Context) error { o.Increment(); return nil }); err != nil {
		t.Errorf("Do: %v", err)
	}
	if v := *o; v != 1 {
		t.Errorf("once failed inside run: %d is not 1", v)
	}
	c <- true
}

// TestOnce is sync's: of N callers of Do on one name, through the layout's
// handles and Clients, one runs f, and every one returns after it has.
func TestOnce(t *testing.T) {
	forEachLayout(t, func(t *testing.T, e *env, l layout) {
		o := new(one)
		onces := handles(e, l, 10, newOnce)
		c := make(chan bool)
		const N = 10
		for i := 0; i < N; i++ {
			go run(t, onces[i], o, c)
		}
		within(t, hang, "Once.Do", func() {
			for i := 0; i < N; i++ {
				<-c
			}
		})
		if v := *o; v != 1 {
			t.Errorf("once failed outside run: %d is not 1", v)
		}
	})
}

// TestOncePanic is sync's but for an intended difference: sync's Once is
// done once f has returned, even by panicking, and never calls f again;
// redisync's is done only when f succeeds: "If f panics, Do releases the
// claim without completing the Once and panics with the same value"
// ([redisync.Once.Do]). So the second Do, through another handle, calls f,
// and the Once is done after that; a third Do does not call f. Do's panic
// is the value f panicked with.
func TestOncePanic(t *testing.T) {
	forEachLayout(t, func(t *testing.T, e *env, l layout) {
		onces := handles(e, l, 3, newOnce)
		// A Do that hangs fails with ctx's error instead.
		ctx, cancel := context.WithTimeout(context.Background(), hang)
		defer cancel()
		func() {
			defer func() {
				if r := recover(); r != "failed" {
					t.Fatalf("Once.Do did not panic with f's value: %v", r)
				}
			}()
			_ = onces[0].Do(ctx, func(context.Context) error {
				panic("failed")
			})
		}()

		calls := 0
		if err := onces[1].Do(ctx, func(context.Context) error { calls++; return nil }); err != nil || calls != 1 {
			t.Fatalf("Once.Do after a panic: %d calls, error %v; want f called once", calls, err)
		}

		if err := onces[2].Do(ctx, func(context.Context) error {
			t.Fatalf("Once.Do called twice")
			return nil
		}); err != nil {
			t.Fatalf("Do: %v", err)
		}
	})
}
