package benchmarks

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// The targets the comparison is measured against.
const (
	TargetHandoverVsPing = 1.0 // 3: handover p50 at most this many PING round trips
	TargetHandoverP99    = 500 * time.Microsecond
	TargetContended      = 1.2 // 3: acquisitions/s at least this many times the best peer's
	TargetFairness       = 0.95
	TargetLongestWait    = 10 * time.Millisecond
	TargetOwnHandles     = 5.0 // 4b: at least this many times the best peer
	TargetParallel       = 1.3 // 2: at least this many times the best peer
	TargetAllocsPerPair  = 9
	TargetHeapPerLock    = 2048 // bytes
	TargetWaiterConns    = 8    // 7: a constant, not one per waiter or name

	// Server and client work (2: per parallel pair; 3: per acquisition).
	TargetCommandsPerPair = 9   // 2: server commands, a script's inner ones included
	TargetServerCPU       = 0.8 // 2: server CPU per pair at most this many times rueidislock's
	TargetClientCPU       = 0.8 // 2: client CPU per pair at most this many times the best peer's
	TargetContendedCPU    = 1.0 // 3: server + client CPU per acquisition at most this many times the best peer's

	// Through the delay proxy (scenarios D0 to D3).
	TargetDelayedContended = 1.5 // D3: acquisitions/s at least this many times the best peer's
	TargetDelayedHandover  = 1.2 // D3: handover p50 at most this many PING round trips through the proxy
	TargetDelayedParallel  = 1.3 // D2: at least this many times the best peer
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
	c, ok := r.Contended[subjectName]
	ratio := float64(c.Handover50) / float64(r.Ping.P50)
	add("3", fmt.Sprintf("handover p50 ≤ %.1f× PING p50", TargetHandoverVsPing), ok && r.Ping.N > 0,
		fmt.Sprintf(ratioFormat+" (%s)", ratio, fmtDur(c.Handover50)), ratio <= TargetHandoverVsPing)
	add("3", "handover p99 ≤ "+fmtDur(TargetHandoverP99), ok, fmtDur(c.Handover99), c.Handover99 <= TargetHandoverP99)
	for _, t := range []struct {
		scenario string
		m        map[string]Summary
		goal     float64
	}{{"3", r.Contended, TargetContended}, {"4b", r.OwnHandles, TargetOwnHandles}, {"2", r.Parallel, TargetParallel}} {
		ratio, peer, ok := r.vsBest(t.m)
		add(t.scenario, fmt.Sprintf("rate ≥ %.1f× the best peer's", t.goal), ok,
			fmt.Sprintf(ratioFormat+" %s", ratio, peer), ratio >= t.goal)
	}
	add("3", fmt.Sprintf("fairness ≥ %.2f", TargetFairness), ok, fmt.Sprintf("%.2f", c.Fairness), c.Fairness >= TargetFairness)
	add("3", "longest wait ≤ "+fmtDur(TargetLongestWait), ok, fmtDur(c.Longest), c.Longest <= TargetLongestWait)
	s, ok := r.Serial[subjectName]
	best, peer := r.bestP50()
	add("1", "serial p50 ≤ the best peer's", ok && best > 0,
		fmt.Sprintf("%s vs %s (%s)", fmtDur(s.P50), fmtDur(best), peer), s.P50 <= best)
	a, ok := r.Allocs[subjectName]
	add("6", fmt.Sprintf("≤ %d allocations per uncontended pair", TargetAllocsPerPair), ok,
		fmt.Sprintf("%.2f", a.Allocs), a.Allocs <= TargetAllocsPerPair)
	h, ok := r.Held[subjectName]
	add("6", fmt.Sprintf("≤ %d B heap per held lock", TargetHeapPerLock), ok,
		fmtBytes(h.HeapPerLock), h.HeapPerLock <= TargetHeapPerLock)
	ts = append(ts, r.workTargets()...)
	ts = append(ts, r.delayedTargets()...)
	w, ok := r.Waiters[subjectName]
	add("7", fmt.Sprintf("shared connections (≤ %d) and every waiter served", TargetWaiterConns), ok,
		fmt.Sprintf("%d conns, %d/%d served", w.Conns, w.Served, w.Waiters),
		w.Conns <= TargetWaiterConns && w.Served == w.Waiters && w.Waiters > 0)
	return ts
}

// workTargets evaluates the targets on the server's and the client's work.
func (r *Results) workTargets() []Target {
	var ts []Target
	add := func(scenario, goal string, known bool, value string, holds bool) {
		ts = append(ts, Target{Scenario: scenario, Goal: goal, Value: value, Holds: known && holds, Known: known})
	}
	p, ok := r.Parallel[subjectName]
	add("2", fmt.Sprintf("≤ %d server commands per pair", TargetCommandsPerPair), ok && p.Commands > 0,
		fmt.Sprintf("%.1f", p.Commands), math.Round(p.Commands*10)/10 <= TargetCommandsPerPair) // rueidis's keep-alive PINGs count too
	const cpuPeer = "rueidislock"
	q, known := r.Parallel[cpuPeer]
	ratio := float64(p.ServerCPU) / float64(max(q.ServerCPU, 1))
	add("2", fmt.Sprintf("server CPU per pair ≤ %.1f× %s's", TargetServerCPU, cpuPeer), ok && known && q.ServerCPU > 0,
		fmt.Sprintf(ratioFormat+" (%s vs %s)", ratio, fmtDur(p.ServerCPU), fmtDur(q.ServerCPU)), ratio <= TargetServerCPU)
	best, peer := r.leastCPU(r.Parallel, func(s Summary) time.Duration { return s.ClientCPU })
	ratio = float64(p.ClientCPU) / float64(max(best, 1))
	add("2", fmt.Sprintf("client CPU per pair ≤ %.1f× the best peer's", TargetClientCPU), ok && best > 0,
		fmt.Sprintf(ratioFormat+" (%s vs %s, %s)", ratio, fmtDur(p.ClientCPU), fmtDur(best), peer), ratio <= TargetClientCPU)
	c, ok := r.Contended[subjectName]
	both := func(s Summary) time.Duration { return s.ServerCPU + s.ClientCPU }
	best, peer = r.leastCPU(r.Contended, both)
	ratio = float64(both(c)) / float64(max(best, 1))
	add("3", fmt.Sprintf("server + client CPU per acquisition ≤ %.1f× the best peer's", TargetContendedCPU), ok && best > 0,
		fmt.Sprintf(ratioFormat+" (%s vs %s, %s)", ratio, fmtDur(both(c)), fmtDur(best), peer), ratio <= TargetContendedCPU)
	return ts
}

// leastCPU returns the least of cpu over the other libraries' figures in m
// that have it, and whose.
func (r *Results) leastCPU(m map[string]Summary, cpu func(Summary) time.Duration) (time.Duration, string) {
	var best time.Duration
	var peer string
	for _, name := range r.Peers {
		if s, ok := m[name]; ok && name != subjectName && cpu(s) > 0 && (best == 0 || cpu(s) < best) {
			best, peer = cpu(s), name
		}
	}
	return best, peer
}

// bestP50 returns the lowest serial p50 of the other libraries, and whose.
func (r *Results) bestP50() (time.Duration, string) { return r.bestP50In(r.Serial) }

// bestP50In returns the lowest p50 in m of the other libraries, and whose.
func (r *Results) bestP50In(m map[string]Summary) (time.Duration, string) {
	var best time.Duration
	var peer string
	for _, name := range r.Peers {
		if s, ok := m[name]; ok && name != subjectName && (best == 0 || s.P50 < best) {
			best, peer = s.P50, name
		}
	}
	return best, peer
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
	if len(r.Primitives) > 0 {
		b.WriteString("\n## redisync's FIFO primitives\n\nThe same scenarios 1 and 3, the redisync column being its Mutex.\n\n")
		r.primitivesTable(&b)
	}
	if r.Delayed.Delay > 0 {
		fmt.Fprintf(&b, "\n## Through a delay proxy\n\nScenarios 0 to 3 again, every connection of every library through one proxy that holds each request and each reply for %v (as Redis on another host of one zone).\n\n", r.Delayed.Delay)
		r.delayedTable(&b)
	}
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

// A rowFunc writes a row of a table: scenario, metric and a cell per column.
type rowFunc func(scenario, metric string, cell func(column string) string)

// newTable writes the header of a table with a column per name in columns
// and returns the function that writes its rows.
func newTable(b *strings.Builder, columns []string) rowFunc {
	fmt.Fprintf(b, "| scenario | metric | %s |\n|---|---|%s\n", strings.Join(columns, " | "), strings.Repeat("---|", len(columns)))
	return func(scenario, metric string, cell func(string) string) {
		cells := make([]string, len(columns))
		for i, p := range columns {
			cells[i] = cell(p)
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", scenario, metric, strings.Join(cells, " | "))
	}
}

// summary returns the cell function of a figure f of m's summaries.
func summary(m map[string]Summary, f func(Summary) string) func(string) string {
	return func(p string) string {
		if s, ok := m[p]; ok {
			return f(s)
		}
		return missing
	}
}

// Cell formats of a Summary.
var (
	rate = func(s Summary) string {
		if s.Stalled > 0 {
			return fmt.Sprintf("%s (%d never woken)", fmtRate(s.Rate()), s.Stalled)
		}
		return fmtRate(s.Rate())
	}
	p50      = func(s Summary) string { return fmtDur(s.P50) }
	p99      = func(s Summary) string { return fmtDur(s.P99) }
	fairness = func(s Summary) string { return fmt.Sprintf("%.2f", s.Fairness) }
	handover = func(s Summary) string { return fmtDur(s.Handover50) + " / " + fmtDur(s.Handover99) }
	longest  = func(s Summary) string { return fmtDur(s.Longest) }
	cpu      = func(s Summary) string { return fmtCPU(s.ServerCPU) + " / " + fmtCPU(s.ClientCPU) }
	commands = func(s Summary) string { return fmt.Sprintf("%.1f", s.Commands) }
)

// fmtCPU formats a CPU time per operation, to a tenth of a microsecond.
func fmtCPU(d time.Duration) string {
	return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond))
}

// table writes the figures: a row per scenario and metric, a column per
// library.
func (r *Results) table(b *strings.Builder) {
	row := newTable(b, r.Peers)
	subject := func(v string) func(string) string {
		return func(p string) string {
			if p == subjectName {
				return v
			}
			return missing
		}
	}
	row("0 reference", "PING p50 (one round trip)", subject(fmtDur(r.Ping.P50)))
	r.serialRows(row)
	row("1 serial", "p50 ÷ PING p50", summary(r.Serial, func(s Summary) string {
		return fmt.Sprintf(ratioFormat, float64(s.P50)/float64(r.Ping.P50))
	}))
	row("1 serial", "server / client CPU per pair", summary(r.Serial, cpu))
	row(fmt.Sprintf("2 parallel, %d goroutines", ParallelGoroutines), "pairs/s", summary(r.Parallel, rate))
	row("2 parallel", "server / client CPU per pair", summary(r.Parallel, cpu))
	row("2 parallel", "server commands per pair (a script's inner ones included)", summary(r.Parallel, commands))
	r.contendedRows(row)
	row("3 contended", "server / client CPU per acquisition", summary(r.Contended, cpu))
	row("3 contended", "wait p50", summary(r.Contended, p50))
	row("3 contended", "wait p99", summary(r.Contended, p99))
	row(fmt.Sprintf("4 same process, %d goroutines, one handle", SameProcessGoroutines), "acquisitions/s", summary(r.SameProcess, rate))
	row("4 one handle", "wait p50", summary(r.SameProcess, p50))
	row("4 one handle", "wait p99", summary(r.SameProcess, p99))
	row(fmt.Sprintf("4b same process, %d goroutines, a handle each", SameProcessGoroutines), "acquisitions/s", summary(r.OwnHandles, rate))
	row("4b a handle each", "wait p50", summary(r.OwnHandles, p50))
	row("4b a handle each", "wait p99", summary(r.OwnHandles, p99))
	row("4b a handle each", "fairness (Jain's index over goroutines)", summary(r.OwnHandles, fairness))
	row("4b a handle each", "longest wait", summary(r.OwnHandles, longest))
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
	row("6 uncontended pair", "allocations", allocs(func(a AllocResult) string { return fmt.Sprintf("%.2f", a.Allocs) }))
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

// primitivesTable writes scenarios 1 and 3 for redisync's Mutex and its
// other primitives.
func (r *Results) primitivesTable(b *strings.Builder) {
	row := newTable(b, append([]string{subjectName}, r.Primitives...))
	r.serialRows(row)
	r.contendedRows(row)
}

// serialRows writes scenario 1's latencies.
func (r *Results) serialRows(row rowFunc) {
	row("1 serial", "lock+unlock p50", summary(r.Serial, p50))
	row("1 serial", "lock+unlock p99", summary(r.Serial, p99))
}

// contendedRows writes scenario 3's rate, fairness, handovers and longest
// wait.
func (r *Results) contendedRows(row rowFunc) {
	row(fmt.Sprintf("3 contended, %d clients", ContendedClients), "acquisitions/s", summary(r.Contended, rate))
	row("3 contended", "fairness (Jain's index over clients)", summary(r.Contended, fairness))
	row("3 contended", "handover p50 / p99 (to another client)", summary(r.Contended, handover))
	row("3 contended", "longest wait", summary(r.Contended, longest))
}

// notes explains how the figures were taken.
func (r *Results) notes(b *strings.Builder) {
	c := r.Config
	fmt.Fprintf(b, `
## How

- Scenarios 1–4b and the PING reference run %v per library and round, in %d rounds (each round every scenario and library once); every figure of theirs is the median of the rounds, taken figure by figure ("never woken": the most of any round). Rates count completed operations over the elapsed time.
- Locks are taken and released under context.Background(), as Lock and Unlock use. Under a context that can be cancelled but has no deadline, rueidis sends every call of the rueidis-based libraries through its pipelining goroutines, and a redisync release makes its own timeout: a pair then took about 200 µs and 9 allocations instead of about 130 µs and 4.
- CPU per pair (1, 2) or acquisition (3): redis-server's (INFO cpu) and this process's (getrusage) CPU time over the scenario, divided by the pairs or acquisitions; the two share the machine's cores.
- 0: one PING round trip through a rueidis client with redisync's options: the least a message from one client through Redis to another can take. 1: one goroutine, one name.
- 2: %d goroutines of one client, a name each. 3: %d clients (own connections, as processes), one goroutine each, one name, %v critical section (busy work); wait = time inside Lock; fairness = Jain's index of the clients' acquisitions; handover = from a holder's call to Unlock to another client's return from Lock; longest wait counts a wait still pending at the end; "never woken" counts waits still pending %v after the end, when every other goroutine had released and stopped. 4: %d goroutines sharing one handle of one client, one name, empty critical section. 4b: the same with a handle per goroutine (as a handle per request gives).
- 5: %d redisync Mutexes held with WithWatchdogTimeout(%v) (renewal every %v) for %v; script calls from INFO commandstats, CPU from getrusage and INFO cpu.
- 6: allocations per pair over %d pairs, process-wide; heap per held lock after GC with %d locks held (handles included; goroutine stacks are not heap).
- 7: %d goroutines of one client, each with its own handle on one of %d names held by another client; connections = connected_clients added by the waiting client; drain = from release of the names until every waiter has locked and unlocked (at most %v).
- 8: %s
- D0–D3: scenarios 0 to 3 again (same sizes and rounds), every library's connections through one TCP proxy on loopback (internal/faultproxy) that holds each chunk of requests and of replies for the delay each way; the proxy's own CPU shares the machine with the rest.
- Peers: redsync and redislock poll every %v (redsync jittered ±50%%); redsync with WithTries(MaxInt32); redislock with LinearBackoff and a %v TTL; rueidislock with KeyMajority 1, NoLoopTracking and client-side caching; see benchmarks/peers.go.
`, c.Duration, c.Rounds, ParallelGoroutines, ContendedClients, CriticalSection, stopGrace, SameProcessGoroutines,
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

// delayedTable writes the figures taken through the delay proxy.
func (r *Results) delayedTable(b *strings.Builder) {
	d := r.Delayed
	row := newTable(b, r.Peers)
	row("D0 reference", "PING p50 (one round trip)", func(column string) string {
		if column != subjectName || d.Ping.N == 0 {
			return missing
		}
		return fmtDur(d.Ping.P50)
	})
	row("D1 serial", "lock+unlock p50", summary(d.Serial, p50))
	row("D1 serial", "lock+unlock p99", summary(d.Serial, p99))
	row(fmt.Sprintf("D2 parallel, %d goroutines", ParallelGoroutines), "pairs/s", summary(d.Parallel, rate))
	row(fmt.Sprintf("D3 contended, %d clients", ContendedClients), "acquisitions/s", summary(d.Contended, rate))
	row("D3 contended", "fairness (Jain's index over clients)", summary(d.Contended, fairness))
	row("D3 contended", "handover p50 / p99 (to another client)", summary(d.Contended, handover))
	row("D3 contended", "longest wait", summary(d.Contended, longest))
}

// delayedTargets evaluates the targets of the scenarios through the delay
// proxy (none when they did not run).
func (r *Results) delayedTargets() []Target {
	d := r.Delayed
	if d.Delay == 0 {
		return nil
	}
	var ts []Target
	add := func(scenario, goal string, known bool, value string, holds bool) {
		ts = append(ts, Target{Scenario: scenario, Goal: goal, Value: value, Holds: known && holds, Known: known})
	}
	c, ok := d.Contended[subjectName]
	ratio := float64(c.Handover50) / float64(max(d.Ping.P50, 1))
	add("D3", fmt.Sprintf("handover p50 ≤ %.1f× PING p50 through the proxy", TargetDelayedHandover), ok && d.Ping.N > 0,
		fmt.Sprintf(ratioFormat+" (%s)", ratio, fmtDur(c.Handover50)), ratio <= TargetDelayedHandover)
	for _, t := range []struct {
		scenario string
		m        map[string]Summary
		goal     float64
	}{{"D3", d.Contended, TargetDelayedContended}, {"D2", d.Parallel, TargetDelayedParallel}} {
		ratio, peer, ok := r.vsBest(t.m)
		add(t.scenario, fmt.Sprintf("rate ≥ %.1f× the best peer's", t.goal), ok,
			fmt.Sprintf(ratioFormat+" %s", ratio, peer), ratio >= t.goal)
	}
	s, ok := d.Serial[subjectName]
	best, peer := r.bestP50In(d.Serial)
	add("D1", "serial p50 ≤ the best peer's", ok && best > 0,
		fmt.Sprintf("%s vs %s (%s)", fmtDur(s.P50), fmtDur(best), peer), s.P50 <= best)
	return ts
}
