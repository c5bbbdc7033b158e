package benchmarks

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// The targets the comparison is measured against.
const (
	TargetSerialVsPing  = 1.2 // scenario 1: at most this many times two PINGs
	TargetParallel      = 1.5 // scenario 2: at least this many times the best peer
	TargetContended     = 2.5 // scenario 3: at least this many times the best peer
	TargetContendedP99  = 5 * time.Millisecond
	TargetSameProcess   = 10.0 // scenario 4: at least this many times the best peer
	TargetAllocsPerPair = 12
	TargetHeapPerLock   = 2048 // bytes
	TargetWaiterConns   = 8    // scenario 7: a constant, not one per waiter or name
)

const (
	subjectName          = "redisync" // the library the targets are about
	missing              = "–"
	percentFormat        = "%.0f%%"
	ratioFormat          = "%.2f×"
	targetHeld, targetNo = "✅", "❌"
)

// A Target is one of the targets, evaluated on a run.
type Target struct {
	Scenario string // "1" to "7"
	Goal     string // what must hold
	Value    string // what the run measured
	Holds    bool
	Known    bool // the run produced the figures the target needs
}

// Targets evaluates the targets on r.
func (r *Results) Targets() []Target {
	var ts []Target
	add := func(scenario, goal string, known bool, value string, holds bool) {
		ts = append(ts, Target{Scenario: scenario, Goal: goal, Value: value, Holds: known && holds, Known: known})
	}
	s, ok := r.Serial[subjectName]
	ratio := float64(s.P50) / float64(r.Ping.P50)
	add("1", fmt.Sprintf("serial p50 ≤ %.1f× two PINGs", TargetSerialVsPing), ok && r.Ping.N > 0,
		fmt.Sprintf(ratioFormat, ratio), ratio <= TargetSerialVsPing)
	for _, c := range []struct {
		scenario string
		m        map[string]Summary
		goal     float64
	}{{"2", r.Parallel, TargetParallel}, {"3", r.Contended, TargetContended}, {"4", r.SameProcess, TargetSameProcess}} {
		ratio, peer, ok := r.vsBest(c.m)
		add(c.scenario, fmt.Sprintf("≥ %.1f× the best peer", c.goal), ok,
			fmt.Sprintf(ratioFormat+" %s", ratio, peer), ratio >= c.goal)
	}
	c, ok := r.Contended[subjectName]
	add("3", "wait p99 ≤ "+TargetContendedP99.String(), ok, fmtDur(c.P99), c.P99 <= TargetContendedP99)
	a, ok := r.Allocs[subjectName]
	add("6", fmt.Sprintf("≤ %d allocations per uncontended pair", TargetAllocsPerPair), ok,
		fmt.Sprintf("%.1f", a.Allocs), a.Allocs <= TargetAllocsPerPair)
	h, ok := r.Held[subjectName]
	add("6", fmt.Sprintf("≤ %d B heap per held lock", TargetHeapPerLock), ok,
		fmtBytes(h.HeapPerLock), h.HeapPerLock <= TargetHeapPerLock)
	w, ok := r.Waiters[subjectName]
	add("7", fmt.Sprintf("shared connections (≤ %d) and every waiter served", TargetWaiterConns), ok,
		fmt.Sprintf("%d conns, %d/%d served", w.Conns, w.Served, w.Waiters),
		w.Conns <= TargetWaiterConns && w.Served == w.Waiters && w.Waiters > 0)
	return ts
}

// vsBest returns redisync's rate over the best other library's, and that
// library's name; ok is false unless both have figures.
func (r *Results) vsBest(m map[string]Summary) (ratio float64, peer string, ok bool) {
	self, ok := m[subjectName]
	if !ok {
		return 0, "", false
	}
	best := 0.0
	for _, name := range r.Peers {
		if s, ok := m[name]; ok && name != subjectName && s.Rate() > best {
			best, peer = s.Rate(), name
		}
	}
	if best == 0 {
		return 0, "", false
	}
	return self.Rate() / best, "vs " + peer, true
}

// Markdown renders the run as a Markdown document: the machine, the table
// and the targets.
func (r *Results) Markdown() string {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "# redisync vs redsync, redislock and rueidislock\n\n")
	fmt.Fprintf(&b, "Taken %s on %s, %d cores (%s), %s, Redis %s, in %.0f s.\n",
		m.Date.Format("2006-01-02 15:04 MST"), m.CPU, m.Cores, m.OS, m.Go, m.Redis, r.Elapsed.Seconds())
	fmt.Fprintf(&b, "Client and server share the machine; figures from one run are noisy, ratios less so.\n\n")
	r.table(&b)
	b.WriteString("\n## Targets\n\n| scenario | target | measured | holds |\n|---|---|---|---|\n")
	for _, t := range r.Targets() {
		mark := targetNo
		switch {
		case !t.Known:
			mark, t.Value = "no figures", missing
		case t.Holds:
			mark = targetHeld
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", t.Scenario, t.Goal, t.Value, mark)
	}
	if len(r.Errors) > 0 {
		b.WriteString("\n## Errors\n\n")
		keys := make([]string, 0, len(r.Errors))
		for k := range r.Errors {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "- %s: %v\n", k, r.Errors[k])
		}
	}
	r.notes(&b)
	return b.String()
}

// table writes the figures: a row per scenario and metric, a column per
// library.
func (r *Results) table(b *strings.Builder) {
	fmt.Fprintf(b, "| scenario | metric | %s |\n|---|---|%s\n", strings.Join(r.Peers, " | "), strings.Repeat("---|", len(r.Peers)))
	row := func(scenario, metric string, cell func(peer string) string) {
		cells := make([]string, len(r.Peers))
		for i, p := range r.Peers {
			cells[i] = cell(p)
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", scenario, metric, strings.Join(cells, " | "))
	}
	summary := func(m map[string]Summary, f func(Summary) string) func(string) string {
		return func(p string) string {
			if s, ok := m[p]; ok {
				return f(s)
			}
			return missing
		}
	}
	rate := func(s Summary) string {
		if s.Stalled > 0 {
			return fmt.Sprintf("%s (%d never woken)", fmtRate(s.Rate()), s.Stalled)
		}
		return fmtRate(s.Rate())
	}
	p50 := func(s Summary) string { return fmtDur(s.P50) }
	p99 := func(s Summary) string { return fmtDur(s.P99) }
	subject := func(v string) func(string) string {
		return func(p string) string {
			if p == subjectName {
				return v
			}
			return missing
		}
	}
	row("1 serial", "lock+unlock p50", summary(r.Serial, p50))
	row("1 serial", "lock+unlock p99", summary(r.Serial, p99))
	row("1 serial", fmt.Sprintf("p50 ÷ two PINGs (%s)", fmtDur(r.Ping.P50)), summary(r.Serial, func(s Summary) string {
		return fmt.Sprintf(ratioFormat, float64(s.P50)/float64(r.Ping.P50))
	}))
	row(fmt.Sprintf("2 parallel, %d goroutines", ParallelGoroutines), "pairs/s", summary(r.Parallel, rate))
	row(fmt.Sprintf("3 contended, %d clients", ContendedClients), "acquisitions/s", summary(r.Contended, rate))
	row("3 contended", "wait p50", summary(r.Contended, p50))
	row("3 contended", "wait p99", summary(r.Contended, p99))
	row("3 contended", "fairness (Jain's index over clients)", summary(r.Contended, func(s Summary) string { return fmt.Sprintf("%.2f", s.Fairness) }))
	row("3 contended", "handoff p50 / p99 (to another client)", summary(r.Contended, func(s Summary) string {
		return fmtDur(s.Handoff50) + " / " + fmtDur(s.Handoff99)
	}))
	row("3 contended", "longest wait", summary(r.Contended, func(s Summary) string { return fmtDur(s.Longest) }))
	row(fmt.Sprintf("4 same process, %d goroutines", SameProcessGoroutines), "acquisitions/s", summary(r.SameProcess, rate))
	row("4 same process", "wait p50", summary(r.SameProcess, p50))
	row("4 same process", "wait p99", summary(r.SameProcess, p99))
	rn := r.Renewal
	if rn.Held.Locks > 0 {
		row(fmt.Sprintf("5 renewal, %d locks", rn.Held.Locks), "script calls/s", subject(fmt.Sprintf("%.0f", rn.CallsPerS)))
		row("5 renewal", "client CPU", subject(fmt.Sprintf(percentFormat, rn.ClientCPU)))
		row("5 renewal", "server CPU", subject(fmt.Sprintf(percentFormat, rn.ServerCPU)))
	}
	allocs := func(f func(AllocResult) string) func(string) string {
		return func(p string) string {
			if a, ok := r.Allocs[p]; ok {
				return f(a)
			}
			return missing
		}
	}
	row("6 uncontended pair", "allocations", allocs(func(a AllocResult) string { return fmt.Sprintf("%.1f", a.Allocs) }))
	row("6 uncontended pair", "bytes allocated", allocs(func(a AllocResult) string { return fmtBytes(a.Bytes) }))
	held := func(f func(HoldResult) string) func(string) string {
		return func(p string) string {
			if h, ok := r.Held[p]; ok {
				return f(h)
			}
			return missing
		}
	}
	row(fmt.Sprintf("6 %d held locks", r.Config.Held), "heap per lock", held(func(h HoldResult) string { return fmtBytes(h.HeapPerLock) }))
	row(fmt.Sprintf("6 %d held locks", r.Config.Held), "goroutines per lock", held(func(h HoldResult) string { return fmt.Sprintf("%.2f", h.GoroutinesPerLock) }))
	waiters := func(f func(WaitersResult) string) func(string) string {
		return func(p string) string {
			if w, ok := r.Waiters[p]; ok && w.Waiters > 0 {
				return f(w)
			}
			return missing
		}
	}
	w7 := fmt.Sprintf("7 %d waiters, %d names", r.Config.Waiters, r.Config.WaiterNames)
	row(w7, "connections", waiters(func(w WaitersResult) string { return fmt.Sprint(w.Conns) }))
	row(w7, "heap while waiting", waiters(func(w WaitersResult) string { return fmtBytes(float64(w.Heap)) }))
	row(w7, "extra goroutines", waiters(func(w WaitersResult) string { return fmt.Sprint(w.Goroutines) }))
	row(w7, "time to drain", waiters(func(w WaitersResult) string {
		if w.TimedOut {
			return "> " + fmtDur(w.Drain)
		}
		return fmtDur(w.Drain)
	}))
	row(w7, "served", waiters(func(w WaitersResult) string { return fmt.Sprintf("%d/%d", w.Served, w.Waiters) }))
	if r.Ceiling > 0 {
		row("8 server ceiling", fmt.Sprintf("lock script calls/s (redis-benchmark -P %d)", CeilingPipeline), subject(fmtRate(r.Ceiling)))
	}
}

// notes explains how the figures were taken.
func (r *Results) notes(b *strings.Builder) {
	c := r.Config
	fmt.Fprintf(b, `
## How

- Scenarios 1–4 run %v per library; rates count completed operations over the elapsed time.
- 1: one goroutine, one name; two PINGs is the same pair timed with two PING round trips through a rueidis client with redisync's options.
- 2: %d goroutines of one client, a name each. 3: %d clients (own connections, as processes), one goroutine each, one name, %v critical section (busy work); wait = time inside Lock; fairness = Jain's index of the clients' acquisitions; handoff = from a holder's call to Unlock to another client's return from Lock; longest wait counts a wait still pending at the end; "never woken" counts waits still pending %v after the end, when every other goroutine had released and stopped. 4: %d goroutines sharing one handle of one client, one name, empty critical section.
- 5: %d redisync Mutexes held with WithWatchdogTimeout(%v) (renewal every %v) for %v; script calls from INFO commandstats, CPU from getrusage and INFO cpu.
- 6: allocations per pair over %d pairs, process-wide; heap per held lock after GC with %d locks held (handles included; goroutine stacks are not heap).
- 7: %d goroutines of one client, each with its own handle on one of %d names held by another client; connections = connected_clients added by the waiting client; drain = from release of the names until every waiter has locked and unlocked (at most %v).
- 8: %s
- Peers: redsync and redislock poll every %v (redsync jittered ±50%%); redsync with WithTries(MaxInt32); redislock with LinearBackoff and a %v TTL; rueidislock with KeyMajority 1, NoLoopTracking and client-side caching; see benchmarks/peers.go.
`, c.Duration, ParallelGoroutines, ContendedClients, CriticalSection, stopGrace, SameProcessGoroutines,
		c.Held, RenewalWatchdog, RenewalWatchdog/3, c.RenewalWindow, c.AllocPairs, c.Held,
		c.Waiters, c.WaiterNames, c.DrainTimeout, orMissing(r.CeilingCmd), c.Poll, RedislockTTL)
}

func orMissing(s string) string {
	if s == "" {
		return "not run"
	}
	return "`" + s + "`"
}

// fmtRate formats a per-second rate with thousands separated by spaces.
func fmtRate(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + " " + s[i:]
	}
	return s
}

// fmtDur formats a duration with three significant digits or so.
func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= 10*time.Millisecond:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	}
}

// fmtBytes formats a byte count.
func fmtBytes(v float64) string {
	switch {
	case v >= 1<<20:
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	case v >= 10<<10:
		return fmt.Sprintf("%.0f KiB", v/(1<<10))
	default:
		return fmt.Sprintf("%.0f B", v)
	}
}
