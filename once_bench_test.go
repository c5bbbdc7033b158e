package redisync_test

import (
	"context"
	"testing"
	"time"
)

// BenchmarkOnce measures a Once against the test's redis-server on loopback:
//
//   - done: Do on a Once whose function has succeeded (one script call that
//     finds it done: what every caller but the first pays);
//   - run: Reset and a Do that runs an empty function (claim, release).
//
// Run with: go test -run '^$' -bench 'Once|WaitGroup' -benchmem
func BenchmarkOnce(b *testing.B) {
	c, _ := newClient(b, standalone)
	f := func(context.Context) error { return nil }
	b.Run("done", func(b *testing.B) {
		o := c.NewOnce(b.Name())
		if err := o.Do(b.Context(), f); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := o.Do(b.Context(), f); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("run", func(b *testing.B) {
		o := c.NewOnce(b.Name())
		b.ReportAllocs()
		for b.Loop() {
			if err := o.Reset(b.Context()); err != nil {
				b.Fatal(err)
			}
			if err := o.Do(b.Context(), f); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkWaitGroup measures a WaitGroup:
//
//   - add-done: Add(1) then Done, the second bringing the counter to zero (a
//     publish);
//   - release: Add(1) in one Client, Wait in another, Done: the time from the
//     Done to the waiter's return is reported (p50, p99 in µs).
func BenchmarkWaitGroup(b *testing.B) {
	b.Run("add-done", func(b *testing.B) {
		c, _ := newClient(b, standalone)
		wg := c.NewWaitGroup(b.Name())
		b.ReportAllocs()
		for b.Loop() {
			if err := wg.Add(b.Context(), 1); err != nil {
				b.Fatal(err)
			}
			if err := wg.Done(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("release", func(b *testing.B) {
		a, _ := newClient(b, standalone)
		w, _ := newClient(b, standalone)
		counter, waiter := a.NewWaitGroup(b.Name()), w.NewWaitGroup(b.Name())
		var lags []time.Duration
		for b.Loop() {
			if err := counter.Add(b.Context(), 1); err != nil {
				b.Fatal(err)
			}
			returned := make(chan time.Time, 1)
			go func() {
				if err := waiter.Wait(b.Context()); err != nil {
					b.Error(err)
				}
				returned <- time.Now()
			}()
			time.Sleep(time.Millisecond) // the waiter waits
			done := time.Now()
			if err := counter.Done(b.Context()); err != nil {
				b.Fatal(err)
			}
			lags = append(lags, (<-returned).Sub(done))
		}
		reportLatencies(b, lags)
	})
}
