package chaos

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// A Report is the outcome of a run: what was checked, what was injected,
// what broke, and how fast the locks recovered.
type Report struct {
	Seed     int64  `json:"seed"`
	Duration string `json:"duration"`
	Mutant   string `json:"mutant,omitempty"`
	Redis    string `json:"redis"`
	Topology string `json:"topology,omitempty"`
	Lease    string `json:"lease"`
	// Ops counts the checked operations per primitive and operation.
	Ops      map[string]map[string]int `json:"ops"`
	OpsTotal int                       `json:"ops_total"`
	// Faults counts the injected faults per kind.
	Faults map[string]int `json:"faults"`
	// Violations counts per invariant, expected and unexpected.
	Violations map[string]*Count `json:"violations"`
	// StaleRejected counts fenced writes rejected as stale: the fence at work.
	StaleRejected int `json:"stale_rejected"`
	// TTR is the time to recover per fault kind: from the fault (F1) or its
	// healing (the others) to the next acquisition of the parked lock by
	// another worker, or of any lock when none was parked.
	TTR map[string]Dist `json:"ttr_ms"`
	// Window is how long each fault kind lasted, from its injection to its
	// healing (for a failover: until the new master serves and, after a
	// killed master, that one is back as a replica in sync).
	Window map[string]Dist `json:"window_ms"`
	// Handover is release to next acquisition while waiters waited, away from
	// faults.
	Handover Dist `json:"handover_ms"`
	// Told is, per fault kind, how long a parked holder took to see Done
	// close after its loss became observable (for F5: after it was cut off).
	Told map[string]Dist `json:"told_ms"`
	// QuietLosses counts holds reported lost (by Done or by the release)
	// with no fault within a lease of them: losses nothing explains.
	QuietLosses int `json:"quiet_losses"`
	// Requeued counts the times a queued waiter lost its place (its
	// heartbeat lapsed, or it was reaped) and queued again at the end;
	// QuietRequeues those with no fault on its worker or the server while
	// it waited: a stall of the machine longer than the heartbeat timeout,
	// or a bug.
	Requeued      int `json:"requeued"`
	QuietRequeues int `json:"quiet_requeues"`
	// Silence is the longest time in which no worker recorded anything: a
	// stall of the machine, which no lease survives if it is long enough.
	Silence float64 `json:"silence_ms"`
	// Overrun is how far past its deadline each call returned (0 for one in
	// time), stops of its process (F2) included (I10).
	Overrun   Dist   `json:"overrun_ms"`
	CallSlack string `json:"call_slack,omitempty"`
	// Unexpected lists the first unexpected violations.
	Unexpected []Violation `json:"unexpected,omitempty"`
}

// A Count splits violations into expected and unexpected ones.
type Count struct {
	Expected   int `json:"expected"`
	Unexpected int `json:"unexpected"`
	// ByFault counts the expected ones per kind of the fault that excused
	// them.
	ByFault map[string]int `json:"by_fault,omitempty"`
}

// A Dist summarizes durations in milliseconds.
type Dist struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

func dist(ns []int64) Dist {
	if len(ns) == 0 {
		return Dist{}
	}
	f := func(v int64) float64 { return float64(v) / float64(time.Millisecond) }
	return Dist{N: len(ns), P50: f(percentile(ns, 50)), P99: f(percentile(ns, 99)), Max: f(ns[len(ns)-1])}
}

// Summarize builds the report of h, whose checks found vs.
func Summarize(h *History, vs []Violation) *Report {
	m := build(h)
	r := &Report{Seed: h.Seed, Duration: h.Duration, Redis: h.Redis, Topology: h.Topology, Mutant: h.Mutant, Lease: h.Params.Lease.String(),
		Ops: map[string]map[string]int{}, Faults: map[string]int{}, Violations: map[string]*Count{}, TTR: map[string]Dist{}}
	for _, inv := range Invariants {
		r.Violations[inv] = &Count{}
	}
	for _, v := range vs {
		if v.Expected {
			c := r.Violations[v.Invariant]
			c.Expected++
			if c.ByFault == nil {
				c.ByFault = map[string]int{}
			}
			c.ByFault[v.Fault]++
		} else {
			r.Violations[v.Invariant].Unexpected++
			if len(r.Unexpected) < 20 {
				r.Unexpected = append(r.Unexpected, v)
			}
		}
	}
	count := func(res, op string) {
		p := resourceOf(h.Resources, res).Primitive
		if r.Ops[p] == nil {
			r.Ops[p] = map[string]int{}
		}
		r.Ops[p][op]++
		r.OpsTotal++
	}
	for _, e := range h.Events {
		switch e.K {
		case Handover: // shown with the acquisitions, not counted again
			count(e.R, string(e.K))
			r.OpsTotal--
		case Acquired, AcquireFailed, Released, Write, Stale, Lost:
			op := string(e.K)
			if e.K == Released && e.Err != "" {
				op = "relfail"
			}
			count(e.R, op)
		}
		if e.K == Stale {
			r.StaleRejected++
		}
	}
	windows := map[string][]int64{}
	for _, f := range h.Faults {
		r.Faults[f.Kind]++
		windows[f.Kind] = append(windows[f.Kind], f.End-f.Start)
	}
	r.Window = map[string]Dist{}
	for k, ws := range windows {
		r.Window[k] = dist(ws)
	}
	r.TTR = m.recovery()
	r.Handover = m.handovers()
	r.Overrun, r.CallSlack = dist(m.overruns()), h.Params.CallSlack.String()
	times := make([]int64, 0, len(h.Events))
	for _, e := range h.Events {
		if e.K != Leak && e.K != Quiet {
			times = append(times, e.T)
		}
	}
	slices.Sort(times)
	for i := 1; i < len(times); i++ {
		r.Silence = max(r.Silence, float64(times[i]-times[i-1])/float64(time.Millisecond))
	}
	lease := int64(h.Params.Lease)
	for _, hd := range m.holds {
		lost := hd.Lost != 0 || strings.Contains(hd.RelErr, "lock lost")
		if lost && !m.anyFaultIn(hd.Inv-lease, min(hd.Rel, h.End)+lease) {
			r.QuietLosses++
		}
	}
	for _, w := range m.waits {
		r.Requeued += w.Requeued
		if w.Requeued > 0 && !m.faultedWhileWaiting(w) {
			r.QuietRequeues += w.Requeued
		}
	}
	told := map[string][]int64{}
	for _, c := range m.losses() {
		if c.hd.Lost != 0 {
			told[c.f.Kind] = append(told[c.f.Kind], c.hd.Lost-c.observable)
		}
	}
	r.Told = map[string]Dist{}
	for k, ts := range told {
		r.Told[k] = dist(ts)
	}
	return r
}

// recovery measures the time to recover after each fault: to the next
// acquisition of the parked lock by another worker where the fault took the
// parked holder's lock away, else of any lock (a holder parked through F4
// keeps its lock until it is told to go on).
func (m *model) recovery() map[string]Dist {
	acqs := byResource(m.holds, func(hd *hold) string { return hd.R })
	var all []*hold
	for _, hs := range acqs {
		all = append(all, hs...)
	}
	slices.SortFunc(all, func(a, b *hold) int { return cmp64(a.Acq, b.Acq) })
	for _, hs := range acqs {
		slices.SortFunc(hs, func(a, b *hold) int { return cmp64(a.Acq, b.Acq) })
	}
	times := map[string][]int64{}
	for _, f := range m.Faults {
		from := f.End
		if f.kills() {
			from = f.Start
		}
		hs, parked := all, f.R != "" && !f.keepsHold()
		if parked {
			hs = acqs[f.R]
		}
		i := sort.Search(len(hs), func(i int) bool { return hs[i].Acq > from })
		for ; i < len(hs); i++ {
			if !parked || hs[i].W != f.W {
				times[f.Kind] = append(times[f.Kind], hs[i].Acq-from)
				break
			}
		}
	}
	out := map[string]Dist{}
	for k, ts := range times {
		out[k] = dist(ts)
	}
	return out
}

// handovers measures release to next acquisition of the same lock when a
// waiter waited at the release and no fault was near. Locks with shared
// holders are left out: their releases and acquisitions do not pair up.
func (m *model) handovers() Dist {
	var out []int64
	waits := byResource(m.waits, func(w *wait) string { return w.R })
	lease := int64(m.Params.Lease)
	for name, hs := range byResource(m.holds, func(hd *hold) string { return hd.R }) {
		if slices.ContainsFunc(hs, func(hd *hold) bool { return hd.Mode == Shared }) {
			continue
		}
		var acq, rel []int64
		for _, hd := range hs {
			acq = append(acq, hd.Acq)
			if hd.Rel != never && !m.anyFaultIn(hd.Rel-lease, hd.Rel+lease) {
				rel = append(rel, hd.Rel)
			}
		}
		slices.Sort(acq)
		for _, t := range waitedAt(waits[name], rel) {
			if i := sort.Search(len(acq), func(i int) bool { return acq[i] > t }); i < len(acq) {
				out = append(out, acq[i]-t)
			}
		}
	}
	return dist(out)
}

// waitedAt returns the times of ts at which one of ws was waiting.
func waitedAt(ws []*wait, ts []int64) []int64 {
	type point struct {
		t     int64
		delta int
	}
	pts := make([]point, 0, 2*len(ws))
	for _, w := range ws {
		pts = append(pts, point{w.Inv, +1}, point{w.Ret, -1})
	}
	slices.SortFunc(pts, func(a, b point) int { return cmp64(a.t, b.t) })
	slices.Sort(ts)
	var out []int64
	n, i := 0, 0
	for _, t := range ts {
		for ; i < len(pts) && pts[i].t < t; i++ {
			n += pts[i].delta
		}
		if n > 0 {
			out = append(out, t)
		}
	}
	return out
}

// Failed reports whether the run broke an invariant unexpectedly.
func (r *Report) Failed() bool {
	for _, c := range r.Violations {
		if c.Unexpected > 0 {
			return true
		}
	}
	return false
}

// Table renders r as Markdown tables.
func (r *Report) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d, %s, lease %s", r.Seed, r.Duration, r.Lease)
	if r.Redis != "" {
		fmt.Fprintf(&b, ", %s", r.Redis)
	}
	if r.Topology != "" {
		fmt.Fprintf(&b, ", %s", r.Topology)
	}
	if r.Mutant != "" {
		fmt.Fprintf(&b, ", mutant %s", r.Mutant)
	}
	fmt.Fprintf(&b, "\n\n| primitive | operations checked | detail |\n|---|---|---|\n")
	prims := make([]string, 0, len(r.Ops))
	for p := range r.Ops {
		prims = append(prims, p)
	}
	slices.Sort(prims)
	for _, p := range prims {
		ops, total := r.Ops[p], 0
		var parts []string
		keys := make([]string, 0, len(ops))
		for op := range ops {
			keys = append(keys, op)
		}
		slices.Sort(keys)
		for _, op := range keys {
			total += ops[op]
			parts = append(parts, fmt.Sprintf("%s %d", op, ops[op]))
		}
		fmt.Fprintf(&b, "| %s | %d | %s |\n", p, total, strings.Join(parts, ", "))
	}
	fmt.Fprintf(&b, "| all | %d | %d stale writes rejected, %d losses away from faults |\n", r.OpsTotal, r.StaleRejected, r.QuietLosses)
	fmt.Fprintf(&b, "\n| fault | injected | lasted p50 | max | recovery p50 | p99 | max | holder told p50 | max |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, k := range FaultKinds {
		if r.Faults[k] == 0 {
			continue
		}
		d, told := r.TTR[k], "–"
		if tl, ok := r.Told[k]; ok {
			told = fmt.Sprintf("%.0f ms | %.0f ms", tl.P50, tl.Max)
		} else {
			told += " | –"
		}
		fmt.Fprintf(&b, "| %s %s | %d | %.0f ms | %.0f ms | %.0f ms | %.0f ms | %.0f ms | %s |\n", k, FaultNames[k], r.Faults[k],
			r.Window[k].P50, r.Window[k].Max, d.P50, d.P99, d.Max, told)
	}
	fmt.Fprintf(&b, "\n| invariant | expected | unexpected | expected, by fault |\n|---|---|---|---|\n")
	for _, inv := range Invariants {
		c := r.Violations[inv]
		var by []string
		for _, k := range FaultKinds {
			if n := c.ByFault[k]; n > 0 {
				by = append(by, fmt.Sprintf("%s %d", k, n))
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %s |\n", inv, c.Expected, c.Unexpected, strings.Join(by, ", "))
	}
	fmt.Fprintf(&b, "\nhandover without faults: p50 %.2f ms, p99 %.2f ms, max %.1f ms over %d handovers; longest silence %.0f ms\n",
		r.Handover.P50, r.Handover.P99, r.Handover.Max, r.Handover.N, r.Silence)
	fmt.Fprintf(&b, "queued waiters that lost their place and queued again: %d, %d of them away from faults\n",
		r.Requeued, r.QuietRequeues)
	fmt.Fprintf(&b, "calls past their deadline: p99 %.1f ms, max %.0f ms over %d calls (I10 allows %v)\n",
		r.Overrun.P99, r.Overrun.Max, r.Overrun.N, r.CallSlack)
	for _, v := range r.Unexpected {
		fmt.Fprintf(&b, "unexpected %s on %q: %s\n", v.Invariant, v.R, v.Detail)
	}
	return b.String()
}

// Excerpt returns the part of h around violation v, for a report that a
// run's log carries: the faults and the events on v's lock (and the lock its
// waiters need too) from a second before v to two seconds after, at most
// limit events, with times relative to the run's first event.
func Excerpt(h *History, v Violation, limit int) string {
	if len(h.Events) == 0 {
		return ""
	}
	t0 := h.start()
	from, to := v.T-int64(time.Second), v.T+2*int64(time.Second)
	names := map[string]bool{v.R: true}
	if with := h.Resources[v.R].With; with != "" {
		names[with] = true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s on %q at +%s:\n", v.Invariant, v.R, ms(v.T-t0))
	for _, f := range h.Faults {
		if f.End >= from && f.Start <= to {
			fmt.Fprintf(&b, "  fault %s %s w%d/g%d %s from +%s to +%s\n", f.Kind, f.Sub, f.W, f.G, f.R, ms(f.Start-t0), ms(f.End-t0))
		}
	}
	var near []Event
	for _, e := range h.Events {
		if e.T >= from && e.T <= to && names[e.R] {
			near = append(near, e)
		}
	}
	if len(near) > limit { // the limit closest to v
		slices.SortStableFunc(near, func(a, b Event) int { return cmp64(abs64(a.T-v.T), abs64(b.T-v.T)) })
		near = near[:limit]
		b.WriteString("  ...\n")
	}
	slices.SortStableFunc(near, func(a, b Event) int { return cmp64(a.T, b.T) })
	for _, e := range near {
		fmt.Fprintf(&b, "  +%s w%d/g%d %s %s %s\n", ms(e.T-t0), e.W, e.G, e.K, e.R, e.Err)
	}
	return b.String()
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
