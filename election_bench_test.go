package redisync_test

import (
	"testing"
	"time"
)

// BenchmarkElection measures an Election against the test's redis-server on
// loopback:
//
//   - campaign-resign: an uncontested Campaign and its Resign (two script
//     calls, like a Mutex's lock and unlock);
//   - proclaim: a leader's Proclaim (one script call);
//   - handover: a leader in one Client resigns while a campaigner in another
//     waits: the time from the Resign's call to the campaigner's election is
//     reported (p50, p99 in µs).
//
// Run with: go test -run '^$' -bench Election -benchmem
func BenchmarkElection(b *testing.B) {
	b.Run("campaign-resign", func(b *testing.B) {
		c, _ := newClient(b, standalone)
		e := c.NewElection(b.Name())
		b.ReportAllocs()
		for b.Loop() {
			if err := e.Campaign(b.Context(), "v"); err != nil {
				b.Fatal(err)
			}
			if err := e.Resign(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("proclaim", func(b *testing.B) {
		c, _ := newClient(b, standalone)
		e := c.NewElection(b.Name())
		if err := e.Campaign(b.Context(), "v"); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := e.Proclaim(b.Context(), "v"); err != nil {
				b.Fatal(err)
			}
		}
		if err := e.Resign(b.Context()); err != nil {
			b.Fatal(err)
		}
	})
	b.Run("handover", func(b *testing.B) {
		a, _ := newClient(b, standalone)
		w, _ := newClient(b, standalone)
		leader, campaigner := a.NewElection(b.Name()), w.NewElection(b.Name())
		var lags []time.Duration
		for b.Loop() {
			if err := leader.Campaign(b.Context(), "a"); err != nil {
				b.Fatal(err)
			}
			elected := make(chan time.Time, 1)
			go func() {
				if err := campaigner.Campaign(b.Context(), "w"); err != nil {
					b.Error(err)
				}
				elected <- time.Now()
			}()
			time.Sleep(time.Millisecond) // the campaigner waits
			resigned := time.Now()
			if err := leader.Resign(b.Context()); err != nil {
				b.Fatal(err)
			}
			lags = append(lags, (<-elected).Sub(resigned))
			if err := campaigner.Resign(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
		reportLatencies(b, lags)
	})
}
