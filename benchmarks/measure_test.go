package benchmarks

import (
	"context"
	"errors"
	"io"
	"math"
	"slices"
	"testing"
	"time"
)

// Jain's index is 1 for equal shares and 1/n when one takes all.
func TestJain(t *testing.T) {
	for _, tc := range []struct {
		counts []int
		want   float64
	}{
		{[]int{5, 5, 5, 5}, 1},
		{[]int{8, 0, 0, 0}, 0.25},
		{[]int{2, 1}, 0.9}, // 9 / (2·5)
		{[]int{0, 0}, 0},
	} {
		if got := jain(tc.counts); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("jain(%v) = %v, want %v", tc.counts, got, tc.want)
		}
	}
}

// A handover is counted from a release to the next acquisition by another
// goroutine; a goroutine taking the lock again is no handover.
func TestHandovers(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond) }
	turns := []turn{
		{g: 1, acquired: at(20), released: at(25)}, // out of order on purpose
		{g: 0, acquired: at(0), released: at(10)},
		{g: 0, acquired: at(11), released: at(15)}, // the same goroutine again
		{g: 2, acquired: at(28), released: at(30)},
	}
	want := []time.Duration{3 * time.Millisecond, 5 * time.Millisecond}
	if got := handovers(turns); !slices.Equal(got, want) {
		t.Errorf("handovers = %v, want %v", got, want)
	}
	if got := handovers(turns[:1]); len(got) != 0 {
		t.Errorf("one turn: handovers = %v, want none", got)
	}
}

// Busy lasts at least d.
func TestBusy(t *testing.T) {
	start := time.Now()
	Busy(100 * time.Microsecond)
	if took := time.Since(start); took < 100*time.Microsecond || took > 50*time.Millisecond {
		t.Errorf("Busy(100µs) took %v", took)
	}
}

// The median of rounds is taken figure by figure; the rate's count and time
// come from one round; a stall in any round is kept.
func TestMedian(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	rounds := []Summary{
		{N: 300, Elapsed: time.Second, P50: ms(9), P99: ms(1), Handover50: ms(5), Fairness: 0.5, Longest: ms(7), ServerCPU: 3},
		{N: 100, Elapsed: time.Second, P50: ms(2), P99: ms(3), Handover50: ms(1), Fairness: 0.9, Longest: ms(9), Stalled: 1, ServerCPU: 1, ClientCPU: 5},
		{N: 400, Elapsed: 2 * time.Second, P50: ms(4), P99: ms(2), Handover50: ms(3), Fairness: 0.7, Longest: ms(8), ServerCPU: 2, ClientCPU: 4},
	}
	got := median(rounds)
	want := Summary{N: 400, Elapsed: 2 * time.Second, P50: ms(4), P99: ms(2), Handover50: ms(3), Fairness: 0.7,
		Longest: ms(8), Stalled: 1, ServerCPU: 2, ClientCPU: 4}
	if got != want {
		t.Errorf("median =\n%+v, want\n%+v", got, want)
	}
	if one := median(rounds[:1]); one != rounds[0] {
		t.Errorf("median of one round = %+v, want it", one)
	}
}

// A scenario that does not finish within its limit is abandoned with
// ErrAbandoned, and its context is cancelled, so that a call waiting with it
// returns and the scenario's goroutine ends (a peer's Lock without end once
// outlived TestQuick: its goroutine failed the leak check).
func TestMeasureCancelsWhatItAbandons(t *testing.T) {
	r := &Results{Errors: map[string]error{}}
	s := stepper{r: r, log: io.Discard, limit: 50 * time.Millisecond, scenario: "serial", peer: "stuck"}
	ended := make(chan error, 1)
	_, err := measure(context.Background(), s, func(ctx context.Context) (int, error) {
		<-ctx.Done() // a Lock that waits with ctx for a lock never released
		ended <- ctx.Err()
		return 0, ctx.Err()
	})
	if !errors.Is(err, ErrAbandoned) || !errors.Is(r.Errors["serial/stuck"], ErrAbandoned) {
		t.Fatalf("measure = %v, Errors %v; want ErrAbandoned in both", err, r.Errors)
	}
	select {
	case cause := <-ended:
		if !errors.Is(cause, context.Canceled) {
			t.Errorf("the scenario's context ended with %v, want context.Canceled", cause)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the abandoned scenario's context was not cancelled")
	}

	// One that finishes keeps its figure.
	v, err := measure(context.Background(), s, func(context.Context) (int, error) { return 7, nil })
	if v != 7 || err != nil {
		t.Errorf("measure = %d, %v; want 7, nil", v, err)
	}
}
