package benchmarks_test

import (
	"context"
	"testing"

	"github.com/go-redisync/redisync/benchmarks"
)

// allocsBudget is what an uncontended redisync pair may allocate, counted
// process-wide: five in December 2026, and one more for what else the
// process does meanwhile (timers, keep-alives).
const allocsBudget = 6

// TestAllocsBudget holds an uncontended Mutex pair to allocsBudget (the
// target, 9, is far above it): a closure given to an interface method once
// made every call's keys and arguments escape and added two allocations that
// no test noticed. Under -race, sync.Pool drops items at random and the count
// means nothing, so it skips there; .ci/run runs it without.
func TestAllocsBudget(t *testing.T) {
	requireServer(t)
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops items at random")
	}
	a, err := benchmarks.AllocsPerPair(context.Background(), benchmarks.Redisync(), addr, 2000)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%.2f allocations, %.0f B per pair", a.Allocs, a.Bytes)
	if a.Allocs > allocsBudget {
		t.Errorf("%.2f allocations per uncontended pair, more than %d", a.Allocs, allocsBudget)
	}
}
