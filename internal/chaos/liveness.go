package chaos

import (
	"fmt"
	"slices"
	"sort"
)

// checkWakeups (I3): whenever a lock becomes free while callers wait for it,
// one of them gets it within a lease plus WakeSlack. A lock is free when no
// holder occupies it (for a Semaphore, fewer than its size); a killed holder
// occupies it until its lease has run out. Near a fault the bound starts
// again when the fault heals, with Recovery instead of the lease (a dead
// party can block others that long); faults never excuse a waiter that stays
// stuck once all is healed. A lock whose waiters need another one too
// (Resource.With) is checked as one with it.
func (m *model) checkWakeups() []Violation {
	var out []Violation
	holds := byResource(m.holds, func(hd *hold) string { return hd.R })
	waits := byResource(m.waits, func(w *wait) string { return w.R })
	for name, ws := range waits {
		res := m.Resources[name]
		hs := holds[name]
		if res.With != "" { // checked as one with the lock its waiters need too
			hs = slices.Concat(hs, holds[res.With])
			ws = slices.Concat(ws, waits[res.With])
		}
		var acquired []int64
		for _, w := range ws {
			if w.OK {
				acquired = append(acquired, w.Ret)
			}
		}
		slices.Sort(acquired)
		for _, f := range m.freeMoments(res, hs) {
			deadline := m.wakeDeadline(f)
			i := sort.Search(len(acquired), func(i int) bool { return acquired[i] > f })
			if i < len(acquired) && acquired[i] <= deadline {
				continue
			}
			for _, w := range ws {
				if w.Inv <= f && w.Ret > deadline && deadline < m.End {
					out = append(out, Violation{Invariant: I3, T: f, R: name,
						Detail: fmt.Sprintf("free at %s; w%d/g%d (waiting since %s) not served by %s", m.at(f), w.W, w.G, m.at(w.Inv), m.at(deadline))})
					break
				}
			}
		}
	}
	return out
}

// freeMoments returns the times at which a hold of res ended and left res
// with room for a waiter.
func (m *model) freeMoments(res Resource, hs []*hold) []int64 {
	type point struct {
		t     int64
		delta int
	}
	var pts []point
	for _, hd := range hs {
		pts = append(pts, point{hd.Acq, +1})
		if end := m.occupied(hd); end != never {
			pts = append(pts, point{end, -1})
		}
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].t < pts[j].t })
	room := 1
	if res.Primitive == "Semaphore" {
		room = res.Shared
	}
	var out []int64
	n := 0
	for _, p := range pts {
		n += p.delta
		if p.delta < 0 && n < room {
			out = append(out, p.t)
		}
	}
	return out
}

// wakeDeadline is when a waiter must have been served after the lock became
// free at f: a lease plus WakeSlack later, or, when a fault was active then
// or comes before that, Recovery plus WakeSlack after the last such fault
// healed.
func (m *model) wakeDeadline(f int64) int64 {
	lease, recovery, slack := int64(m.Params.Lease), int64(m.Params.Recovery), int64(m.Params.WakeSlack)
	deadline := f + lease + slack
	for changed := true; changed; {
		changed = false
		for _, ft := range m.faultsIn(f-recovery, deadline) {
			if d := ft.End + recovery + slack; d > deadline {
				deadline, changed = d, true
			}
		}
	}
	return deadline
}

// checkFIFO (I4): on a FairMutex, a waiter whose place in the queue was
// confirmed before another caller began is served before that caller. A
// waiter whose worker or server suffered a fault while it waited may lose its
// place (its heartbeat lapses, the queue is gone) and is not compared.
func (m *model) checkFIFO() []Violation {
	var out []Violation
	for name, ws := range byResource(m.waits, func(w *wait) string { return w.R }) {
		if !m.Resources[name].FIFO {
			continue
		}
		// The queued waiters that were served, by the time they queued, with
		// the latest service among those queued so far.
		var queued []*wait
		for _, w := range ws {
			if w.OK && w.Queued != 0 && !m.faultedWhileWaiting(w) {
				queued = append(queued, w)
			}
		}
		slices.SortFunc(queued, func(a, b *wait) int { return cmp64(a.Queued, b.Queued) })
		latest := make([]*wait, len(queued))
		for i, w := range queued {
			latest[i] = w
			if i > 0 && latest[i-1].Ret > w.Ret {
				latest[i] = latest[i-1]
			}
		}
		for _, b := range ws {
			if !b.OK {
				continue
			}
			i := sort.Search(len(queued), func(i int) bool { return queued[i].Queued >= b.Inv })
			if i == 0 {
				continue
			}
			if a := latest[i-1]; a.Ret > b.Ret {
				out = append(out, Violation{Invariant: I4, T: b.Ret, R: name,
					Detail: fmt.Sprintf("w%d/g%d (called %s) served before w%d/g%d (queued %s)", b.W, b.G, m.at(b.Inv), a.W, a.G, m.at(a.Queued))})
			}
		}
	}
	return out
}

// faultedWhileWaiting reports whether a fault hit w's worker, or a fault
// that loses the queue hit the server, while w waited.
func (m *model) faultedWhileWaiting(w *wait) bool {
	for _, f := range m.faultsIn(w.Inv, w.Ret) {
		switch {
		case f.W == w.W:
			return true
		case f.Global && f.Kind != "F8" && !(f.Kind == "F9" && f.Sub == "pubsub"):
			return true
		}
	}
	return false
}

// checkTold (I5): a holder parked in its critical section for a fault that
// takes its lease away sees Done close within the bound of that fault: one
// renewal interval plus one round trip after the loss became observable
// (the deletion's reply, the server's return, the process's resumption), or,
// cut off from Redis (F5; its master killed, F15, when another holder got
// in), by the time its lease can have run out on the server.
func (m *model) checkTold() []Violation {
	var out []Violation
	for _, c := range m.losses() {
		switch {
		case c.hd.Lost == 0:
			out = append(out, Violation{Invariant: I5, T: c.f.Start, R: c.hd.R,
				Detail: fmt.Sprintf("%s: w%d/g%d never told of its loss", c.f.Kind, c.f.W, c.f.G)})
		case c.hd.Lost > c.bound:
			out = append(out, Violation{Invariant: I5, T: c.f.Start, R: c.hd.R,
				Detail: fmt.Sprintf("%s: w%d/g%d told %s after the bound", c.f.Kind, c.f.W, c.f.G, ms(c.hd.Lost-c.bound))})
		}
	}
	return out
}

// A loss is a parked hold whose lease a fault took away: when the loss
// became observable, and by when the holder must have been told.
type loss struct {
	f          Fault
	hd         *hold
	observable int64
	bound      int64
}

// losses returns the parked holds that faults took away.
func (m *model) losses() []loss {
	var out []loss
	for _, f := range m.Faults {
		if f.G < 0 {
			continue
		}
		var c loss
		switch {
		case f.Kind == "F9" && f.Sub != "pubsub", f.Kind == "F3", f.Kind == "F2":
			c.observable = f.End
			c.bound = f.End + int64(m.Params.Interval)
		case f.Kind == "F5":
			c.observable = f.Start
			c.bound = f.Start + int64(m.Params.Lease)
		case m.breaksLeases(f) && (f.Kind == "F15" || f.Kind == "F13"):
			// A failover may or may not lose the hold: it is lost when
			// another holder got in. A killed master (F15) takes the
			// renewals with it: the holder stops at its lease, counted from
			// its acquire or its last renewal before the kill, unless its
			// next renewal on the new master finds the hold gone first. The
			// old primary of a Sentinel failover (F13) lives on, and renews,
			// until it is demoted: the holder learns at its first renewal on
			// the new primary, within a renewal interval of the failover's
			// end.
			hd := m.holdAt(f.W, f.G, f.Start)
			if hd == nil || !m.overlapped(hd) {
				continue
			}
			c.observable = f.Start
			c.bound = max(f.Start, hd.Acq) + int64(m.Params.Lease)
			if f.Kind == "F13" {
				c.observable = f.End
				c.bound = f.End + int64(m.Params.Interval)
			}
		default:
			continue
		}
		c.f, c.bound = f, c.bound+int64(m.Params.RoundTrip)
		if c.hd = m.holdAt(f.W, f.G, f.Start); c.hd != nil && c.hd.Killed == 0 {
			out = append(out, c)
		}
	}
	return out
}

// overlapped reports whether another holder that may not be inside together
// with hd entered its lock while hd was inside.
func (m *model) overlapped(hd *hold) bool {
	for _, o := range m.holds {
		if o != hd && o.R == hd.R && o.Enter > hd.Enter && o.Enter < hd.Exit &&
			!admissible(m.Resources[hd.R], map[*hold]bool{hd: true, o: true}) {
			return true
		}
	}
	return false
}

// holdAt returns the hold of worker w's goroutine g that was held at t.
func (m *model) holdAt(w, g int, t int64) *hold {
	for _, hd := range m.slots[[2]int{w, g}] {
		if hd.Acq <= t && t <= hd.Rel {
			return hd
		}
	}
	return nil
}

// checkLeaks (I6) reports the leaks the workers and the coordinator found.
func (m *model) checkLeaks() []Violation {
	var out []Violation
	for _, e := range m.Events {
		if e.K == Leak && e.N > 0 {
			out = append(out, Violation{Invariant: I6, T: e.T,
				Detail: fmt.Sprintf("w%d: %d %s left: %s", e.W, e.N, e.R, e.Err)})
		}
	}
	return out
}

// at formats t relative to the first event of the run.
func (m *model) at(t int64) string {
	if t == never {
		return "never"
	}
	if len(m.Events) == 0 {
		return ms(t)
	}
	return "+" + ms(t-m.Events[0].T)
}
