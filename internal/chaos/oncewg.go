package chaos

import (
	"fmt"
	"slices"
	"sort"
)

// lostDataIn returns the kind of a fault that may have made Redis forget the
// data of resource r during [from, to], "" when there is none.
func (m *model) lostDataIn(r string, from, to int64) string {
	for f := range m.faultsIn(from, to) {
		if f.losesData() && (f.Global || f.R == r || f.Kind != "F9") {
			return f.Kind
		}
	}
	return ""
}

// checkOnce (I7) checks each Once's runs: once a run's function succeeded and
// its Do recorded it (returned nil), a later run may complete again only
// after a Reset that may have come between: one that returned after the
// first function ended (the record was written after that) and was called
// before the later run got its claim. Runs that overlap are I1's concern.
// It is expected when a fault broke either run's lease or may have made
// Redis forget the record in between.
func (m *model) checkOnce() []Violation {
	var out []Violation
	runs := byResource(m.holds, func(hd *hold) string { return hd.R })
	resets := byResource(m.resets, func(c call) string { return c.R })
	for name, hs := range runs {
		if m.Resources[name].Primitive != "Once" {
			continue
		}
		var done []*hold
		for _, hd := range hs {
			if hd.Completed != 0 {
				done = append(done, hd)
			}
		}
		slices.SortFunc(done, func(a, b *hold) int { return cmp64(a.Acq, b.Acq) })
		for i, first := range done {
			if first.RelErr != "" || first.Rel == never {
				continue // perhaps not recorded: another run may complete
			}
			j := sort.Search(len(done), func(j int) bool { return done[j].Acq > first.Exit })
			if j >= len(done) || j == i {
				continue
			}
			next := done[j]
			if slices.ContainsFunc(resets[name], func(c call) bool { return c.T > first.Exit && c.T0 < next.Acq }) {
				continue
			}
			cause := m.leaseBroken(first, true)
			if cause == "" {
				cause = m.leaseBroken(next, true)
			}
			if cause == "" {
				cause = m.lostDataIn(name, first.Exit, next.Acq)
			}
			out = append(out, Violation{Invariant: I7, Expected: cause != "", Fault: cause, T: next.Completed, R: name,
				Detail: fmt.Sprintf("w%d/g%d's run completed at %s after w%d/g%d's had completed at %s (recorded by %s), with no Reset between",
					next.W, next.G, m.at(next.Completed), first.W, first.G, m.at(first.Completed), m.at(first.Rel))})
		}
	}
	return out
}

// checkWaitGroup (I8) checks that no Wait of a WaitGroup returned while its
// counter was surely above zero. The counter is at least lb(t): the deltas
// of the Adds that returned successfully by t, less one for every Done
// called by t (it may have been applied then). A killed worker's Adds do not
// count: its Dones in flight when it died may have been applied unrecorded
// (they are recorded with their call once they return). After a fault that may have
// made Redis forget the counter, only what came after it counts (the counter
// may be zero from its start). A Wait that returned nil must have seen
// lb(t) <= 0 at some t between its call and its return; no fault excuses it.
func (m *model) checkWaitGroup() []Violation {
	var out []Violation
	waits := byResource(m.waits, func(w *wait) string { return w.R })
	for name, adds := range byResource(m.adds, func(c call) string { return c.R }) { // the WaitGroups
		ws := waits[name]
		pts := m.lowerBound(name, adds)
		at := func(t int64) int { // the index of the last point at or before t
			return sort.Search(len(pts), func(i int) bool { return pts[i].t > t }) - 1
		}
		for _, w := range ws {
			if !w.Finished {
				continue
			}
			low := int64(0)
			if i := at(w.Inv); i >= 0 {
				low = pts[i].lb
			}
			for i := at(w.Inv) + 1; i < len(pts) && pts[i].t <= w.Ret && low > 0; i++ {
				low = min(low, pts[i].lb)
			}
			if low <= 0 {
				continue
			}
			out = append(out, Violation{Invariant: I8, T: w.Ret, R: name,
				Detail: fmt.Sprintf("w%d/g%d's Wait (called at %s) returned at %s while the counter was at least %d",
					w.W, w.G, m.at(w.Inv), m.at(w.Ret), low)})
		}
	}
	return out
}

// A bound is the counter's lower bound from time t on.
type bound struct {
	t, lb int64
}

// lowerBound returns the steps of a WaitGroup's lower bound (see
// checkWaitGroup), in time order.
func (m *model) lowerBound(name string, adds []call) []bound {
	type step struct {
		t, delta int64
		reset    bool
		end      int64 // a reset's end: Adds returned before it are forgotten
	}
	var steps []step
	for _, c := range adds {
		_, killed := m.kills[c.W]
		switch {
		case c.N > 0 && c.Err == "" && !killed:
			steps = append(steps, step{t: c.T, delta: c.N})
		case c.N < 0:
			steps = append(steps, step{t: c.T0, delta: c.N})
		}
	}
	for _, f := range m.Faults {
		if f.losesData() && (f.Global || f.R == name || f.Kind != "F9") {
			steps = append(steps, step{t: f.Start, reset: true, end: f.End})
		}
	}
	slices.SortStableFunc(steps, func(a, b step) int { return cmp64(a.t, b.t) })
	var out []bound
	lb, forget := int64(0), int64(-1)
	for _, s := range steps {
		switch {
		case s.reset:
			lb, forget = 0, max(forget, s.end)
		case s.delta > 0 && s.t <= forget:
			continue // it may have been applied before the loss
		default:
			lb += s.delta
		}
		out = append(out, bound{t: s.t, lb: lb})
	}
	return out
}
