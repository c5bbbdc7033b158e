package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// Scenario sizes.
const (
	// ParallelGoroutines is scenario 2's goroutine count, each on its own name.
	ParallelGoroutines = 64
	// ContendedClients is scenario 3's Client count: separate connections,
	// as separate processes would have. Each runs one goroutine, so the
	// scenario measures handovers between processes only (scenario 4 covers
	// goroutines of one process).
	ContendedClients = 4
	// CriticalSection is how long scenario 3 holds the lock, busy (a sleep
	// of 100 µs lasts about a millisecond, and would cap every library near
	// 1,000 acquisitions/s).
	CriticalSection = 100 * time.Microsecond
	// SameProcessGoroutines is the goroutine count of scenarios 4 (all
	// sharing one handle of one Client) and 4b (a handle each, as a handle
	// per request would give), with an empty critical section.
	SameProcessGoroutines = 16
)

// A Summary is what a timed scenario measured: how many operations it
// completed in how long, and percentiles of their latency (a Lock+Unlock
// pair in scenario 1, the wait inside Lock in scenarios 3 and 4).
type Summary struct {
	N        int
	Elapsed  time.Duration
	P50, P99 time.Duration
	// Stalled counts the Lock calls of scenarios 2 to 4 still waiting
	// stopGrace after the time was up, although every other goroutine had
	// released and stopped by then: waiters the library failed to wake.
	// They were cancelled and are not in the percentiles.
	Stalled int
	// Of scenarios 2 to 4: Fairness is Jain's index of the acquisitions per
	// goroutine (1: equal shares; 1/n: one took all); Longest is the longest
	// wait in Lock, a stalled one (until cancelled) included. Of scenarios 3
	// and 4 (one lock): Handover50 and Handover99 are percentiles of the time
	// from a holder's call to Unlock to the next acquisition's return when
	// another goroutine (in scenario 3, another client) makes it.
	Fairness               float64
	Handover50, Handover99 time.Duration
	Longest                time.Duration
	// Of scenarios 1 and 2: the CPU time per operation of redis-server
	// (INFO cpu) and of this process (getrusage), warm-up included, and
	// the commands the server ran per operation (INFO commandstats, a
	// script's inner commands included).
	ServerCPU, ClientCPU time.Duration
	Commands             float64
}

// A turn is one acquisition of a hammer: by goroutine g, from acquired to
// released.
type turn struct {
	g                  int
	acquired, released time.Time
}

// jain returns Jain's fairness index of counts: (Σx)² / (n·Σx²).
func jain(counts []int) float64 {
	var sum, squares float64
	for _, c := range counts {
		sum += float64(c)
		squares += float64(c) * float64(c)
	}
	if squares == 0 {
		return 0
	}
	return sum * sum / (float64(len(counts)) * squares)
}

// handovers returns, sorted, the times from a release to the next
// acquisition of the lock when another goroutine made it (turns of one lock,
// in any order; 0 if the next acquisition came first, as after a lost
// lock).
func handovers(turns []turn) []time.Duration {
	slices.SortFunc(turns, func(a, b turn) int { return a.acquired.Compare(b.acquired) })
	var out []time.Duration
	for i := 1; i < len(turns); i++ {
		if turns[i].g != turns[i-1].g {
			out = append(out, max(0, turns[i].acquired.Sub(turns[i-1].released)))
		}
	}
	slices.Sort(out)
	return out
}

// Busy works, without sleeping, for d: a critical section of that length
// (a sleep of 100 µs lasts about a millisecond).
func Busy(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// Rate returns operations per second.
func (s Summary) Rate() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.N) / s.Elapsed.Seconds()
}

// summarize sorts lat and reads its percentiles.
func summarize(lat []time.Duration, elapsed time.Duration) Summary {
	slices.Sort(lat)
	return Summary{N: len(lat), Elapsed: elapsed, P50: percentile(lat, 50), P99: percentile(lat, 99)}
}

// percentile returns the p-th percentile of sorted durations (0 if none).
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, len(sorted)*p/100)]
}

// lockName returns a lock name no other run or scenario uses.
func lockName(p Peer, scenario string, i int) string {
	return fmt.Sprintf("bench:%s:%s:%08x:%d", p.Name, scenario, runID, i)
}

// runID separates the keys of concurrent or repeated runs on one server.
var runID = rand.Uint32()

// warmup is how many pairs precede a measurement, so that connections are
// dialled and scripts loaded before the clock starts.
const warmup = 50

// pair locks and unlocks m once.
func pair(ctx context.Context, m Mutex) error {
	h, err := m.Lock(ctx)
	if err != nil {
		return err
	}
	return h.Unlock(ctx)
}

// Serial is scenario 1: one goroutine locks and unlocks one name for d and
// reports the latency of a pair.
func Serial(ctx context.Context, p Peer, addr string, d time.Duration) (Summary, error) {
	cs, err := connectAll(p, addr, 1)
	if err != nil {
		return Summary{}, err
	}
	defer closeAll(cs)
	m := cs[0].NewMutex(lockName(p, "serial", 0))
	return withCPU(ctx, addr, func() (Summary, error) { return timeSerial(d, func() error { return pair(ctx, m) }) })
}

// withCPU runs f and adds to its summary the CPU time per operation of the
// server at addr and of this process.
func withCPU(ctx context.Context, addr string, f func() (Summary, error)) (Summary, error) {
	admin, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		return Summary{}, err
	}
	defer admin.Close()
	_, commands0, server0, err := serverStats(ctx, admin)
	if err != nil {
		return Summary{}, err
	}
	client0 := ProcessCPU()
	s, err := f()
	if err != nil {
		return s, err
	}
	client1 := ProcessCPU()
	_, commands1, server1, err := serverStats(ctx, admin)
	if err != nil || s.N == 0 {
		return s, err
	}
	s.ServerCPU = time.Duration((server1 - server0) * float64(time.Second) / float64(s.N))
	s.ClientCPU = (client1 - client0) / time.Duration(s.N)
	s.Commands = float64(commands1-commands0) / float64(s.N)
	return s, nil
}

// PingReference is the physical yardstick: one PING round trip through a
// rueidis client with [RueidisOption], timed like a pair.
func PingReference(ctx context.Context, addr string, d time.Duration) (Summary, error) {
	rc, err := rueidis.NewClient(RueidisOption(addr))
	if err != nil {
		return Summary{}, err
	}
	defer rc.Close()
	return timeSerial(d, func() error { return rc.Do(ctx, rc.B().Ping().Build()).Error() })
}

// timeSerial runs op for d after a warm-up and summarises its latency.
func timeSerial(d time.Duration, op func() error) (Summary, error) {
	for range warmup {
		if err := op(); err != nil {
			return Summary{}, err
		}
	}
	lat := make([]time.Duration, 0, 1<<15)
	start := time.Now()
	for time.Since(start) < d {
		t := time.Now()
		if err := op(); err != nil {
			return Summary{}, err
		}
		lat = append(lat, time.Since(t))
	}
	return summarize(lat, time.Since(start)), nil
}

// Parallel is scenario 2: ParallelGoroutines goroutines of one Client lock
// and unlock names of their own for d; the rate is pairs per second.
func Parallel(ctx context.Context, p Peer, addr string, d time.Duration) (Summary, error) {
	cs, err := connectAll(p, addr, 1)
	if err != nil {
		return Summary{}, err
	}
	defer closeAll(cs)
	ms := make([]Mutex, ParallelGoroutines)
	for g := range ms {
		ms[g] = cs[0].NewMutex(lockName(p, "parallel", g))
	}
	return withCPU(ctx, addr, func() (Summary, error) { return hammer(ctx, d, len(ms), func(g int) Mutex { return ms[g] }, 0) })
}

// Contended is scenario 3: ContendedClients Clients, one goroutine each,
// take turns on one name and hold it for CriticalSection; the rate is
// acquisitions per second and the percentiles are of the wait in Lock.
func Contended(ctx context.Context, p Peer, addr string, d time.Duration) (Summary, error) {
	cs, err := connectAll(p, addr, ContendedClients)
	if err != nil {
		return Summary{}, err
	}
	defer closeAll(cs)
	name := lockName(p, "contended", 0)
	ms := make([]Mutex, len(cs))
	for i, c := range cs {
		ms[i] = c.NewMutex(name)
	}
	return withCPU(ctx, addr, func() (Summary, error) {
		return hammer(ctx, d, len(ms), func(g int) Mutex { return ms[g] }, CriticalSection)
	})
}

// SameProcess is scenario 4: SameProcessGoroutines goroutines share one
// handle of one Client and lock and unlock it for d with nothing in between;
// the rate is acquisitions per second and the percentiles are of the wait.
func SameProcess(ctx context.Context, p Peer, addr string, d time.Duration) (Summary, error) {
	cs, err := connectAll(p, addr, 1)
	if err != nil {
		return Summary{}, err
	}
	defer closeAll(cs)
	m := cs[0].NewMutex(lockName(p, "same-process", 0))
	return hammer(ctx, d, SameProcessGoroutines, func(int) Mutex { return m }, 0)
}

// SameProcessHandles is scenario 4b: SameProcessGoroutines goroutines of
// one Client, each with a handle of its own on one name, lock and unlock it
// for d with nothing in between.
func SameProcessHandles(ctx context.Context, p Peer, addr string, d time.Duration) (Summary, error) {
	cs, err := connectAll(p, addr, 1)
	if err != nil {
		return Summary{}, err
	}
	defer closeAll(cs)
	name := lockName(p, "same-process-handles", 0)
	ms := make([]Mutex, SameProcessGoroutines)
	for g := range ms {
		ms[g] = cs[0].NewMutex(name)
	}
	return hammer(ctx, d, len(ms), func(g int) Mutex { return ms[g] }, 0)
}

// stopGrace is how long a hammer lets the Lock calls still waiting when its
// time is up finish before cancelling them: the holders keep releasing, so
// a waiter that is not served by then was not woken at all.
const stopGrace = time.Second

// hammer runs n goroutines for d, goroutine g locking mutex(g), holding it
// for crit and unlocking it, and summarises the waits in Lock.
func hammer(ctx context.Context, d time.Duration, n int, mutex func(g int) Mutex, crit time.Duration) (Summary, error) {
	for g := range n { // warm-up: connections dialled, scripts loaded
		if err := pair(ctx, mutex(g)); err != nil {
			return Summary{}, err
		}
	}
	lockCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stop atomic.Bool
	var stalled atomic.Int64
	lats := make([][]time.Duration, n)
	turns := make([][]turn, n)
	stalls := make([]time.Duration, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for g := range n {
		wg.Go(func() {
			m := mutex(g)
			lat := make([]time.Duration, 0, 1024)
			ts := make([]turn, 0, 1024)
			defer func() { lats[g], turns[g] = lat, ts }()
			for !stop.Load() {
				t := time.Now()
				h, err := m.Lock(lockCtx)
				if err != nil && stop.Load() {
					stalled.Add(1)
					stalls[g] = time.Since(t)
					return
				}
				if err != nil {
					errs[g] = err
					cancel() // the others' waits end too
					return
				}
				acquired := time.Now()
				lat = append(lat, acquired.Sub(t))
				Busy(crit)
				released := time.Now()
				if err := h.Unlock(ctx); err != nil {
					errs[g] = err
					cancel()
					return
				}
				ts = append(ts, turn{g: g, acquired: acquired, released: released})
			}
		})
	}
	select {
	case <-time.After(d):
	case <-lockCtx.Done():
	}
	stop.Store(true)
	elapsed := time.Since(start)
	if !waitTimeout(&wg, stopGrace) {
		cancel()
		wg.Wait()
	}
	if err := errors.Join(errs...); err != nil {
		return Summary{}, err
	}
	all := slices.Concat(lats...)
	sum := summarize(all, elapsed)
	sum.Stalled = int(stalled.Load())
	counts := make([]int, n)
	for g, l := range lats {
		counts[g] = len(l)
	}
	sum.Fairness = jain(counts)
	if len(all) > 0 {
		sum.Longest = all[len(all)-1] // summarize sorted it
	}
	sum.Longest = max(sum.Longest, slices.Max(stalls))
	hs := handovers(slices.Concat(turns...))
	sum.Handover50, sum.Handover99 = percentile(hs, 50), percentile(hs, 99)
	return sum, nil
}

// waitTimeout waits for wg for at most d and reports whether it finished.
func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}
