// Copyright 2017 The Go Authors and the redisync authors. Ported from
// golang.org/x/sync/semaphore/semaphore_test.go, used under its BSD-style
// license.

// The shared layout failed here before the handle's call lock handed itself
// to a waiting Acquire: the goroutine's TryAcquire/Release loop through the
// same handle retook it every time, so the Acquire(ctx, 2) never reached
// Redis and the loop never ended.

package conformance_test

import (
	"context"
	"testing"
)

// TestWeightedAcquireCanceled is x/sync's, with the test's first permit
// released, by the goroutine, through the handle that acquired it.
func TestWeightedAcquireCanceled(t *testing.T) {
	forEachSemaphore(t, func(t *testing.T, e *env, l layout, k semKind) {
		inOrder(t, k) // its loop of TryAcquire ends once the Acquire(ctx, 2) waits
		// https://go.dev/issue/63615
		sems := semaphores(e, l, k, 4, 2)
		ctx, cancel := context.WithCancel(context.Background())
		check(t, "Acquire", sems[0].Acquire(context.Background(), 1))
		ch := make(chan struct{})
		go func() {
			// Synchronize with the Acquire(2) below.
			for sems[1].TryAcquire(1) {
				sems[1].Release(1)
			}
			// Now cancel ctx, and then release the token.
			cancel()
			sems[0].Release(1)
			close(ch)
		}()
		// Since the context being closed happens before enough tokens become available,
		// this Acquire must fail.
		var err error
		within(t, hang, "Acquire(ctx, 2)", func() { err = sems[2].Acquire(ctx, 2) })
		if err != context.Canceled {
			t.Errorf("Acquire with canceled context returned wrong error: want context.Canceled, got %v", err)
		}
		// There must always be two tokens in the semaphore after the other
		// goroutine releases the one we held at the start.
		within(t, hang, "the release", func() { <-ch })
		if !sems[3].TryAcquire(2) {
			t.Fatal("TryAcquire after canceled Acquire failed")
		}
		// Additionally verify that we don't acquire with a done context even when
		// we wouldn't need to block to do so.
		sems[3].Release(2)
		if err := sems[3].Acquire(ctx, 1); err != context.Canceled {
			t.Errorf("Acquire with canceled context returned wrong error: want context.Canceled, got %v", err)
		}
	})
}
