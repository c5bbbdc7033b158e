package chaos

import (
	"fmt"
	"slices"
	"sort"
	"time"
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
	for _, c := range m.contentions() {
		for _, fr := range m.freeings(c.res, c.hs) {
			deadline := m.wakeDeadline(fr.t)
			if deadline >= m.End || c.served(fr.t, deadline) {
				continue
			}
			if w := c.unserved(fr.t, deadline); w != nil {
				out = append(out, Violation{Invariant: I3, T: fr.t, R: c.name,
					Detail: fmt.Sprintf("free at %s; w%d/g%d (waiting since %s) not served by %s", m.at(fr.t), w.W, w.G, m.at(w.Inv), m.at(deadline))})
			}
		}
	}
	return out
}

// checkPrompt (I9): a lock that goes free while callers wait for it
// reaches one of them within a heartbeat timeout plus WakeSlack when no
// fault but the death of waiters came near. A queued waiter that died may be
// handed the lock, which then stays in its name until its heartbeat deadline:
// the others, queued or not, must look again by then, not sleep on the lease
// they read before (I3 allows a lease). A free moment near any other fault,
// or near the death of one of the lock's holders, is I3's alone, as are the
// locks whose waiters a dead party holds back longer by design: an RWMutex's
// (a dead writer's claim, 3 s), a Once's, a WaitGroup's, an Election's. A
// killed worker's waits end at its death.
func (m *model) checkPrompt() []Violation {
	if m.Params.Heartbeat == 0 {
		return nil
	}
	var out []Violation
	for _, c := range m.contentions() {
		if !promptKinds[c.res.Primitive] {
			continue
		}
		diedHolding := map[int]bool{} // the workers that died holding the lock, or a part of it
		for _, hd := range c.hs {
			if hd.Killed != 0 {
				diedHolding[hd.W] = true
			}
		}
		for _, w := range c.ws {
			if t, killed := m.kills[w.W]; killed && w.Part && !w.OK && w.Ret == t {
				diedHolding[w.W] = true // a MultiMutex call that died with some of its names
			}
		}
		// An attempt that took the lock and gave it back because its
		// replicas did not acknowledge it held the lock meanwhile: while a
		// replica lags, each WithSyncReplicas attempt keeps the lock from
		// the others for up to its timeout (docs/guarantees.md).
		hs := slices.Concat(c.hs, m.unreplicatedOf(c))
		for _, fr := range m.freeings(c.res, hs) {
			deadline := fr.t + int64(m.Params.Heartbeat+m.Params.WakeSlack)
			if deadline >= m.End || c.served(fr.t, deadline) || m.promptExcused(fr, deadline, diedHolding) {
				continue
			}
			if w := c.unserved(fr.t, deadline); w != nil {
				out = append(out, Violation{Invariant: I9, T: fr.t, R: c.name,
					Detail: fmt.Sprintf("free at %s; w%d/g%d (waiting since %s) not served by %s, a heartbeat timeout later", m.at(fr.t), w.W, w.G, m.at(w.Inv), m.at(deadline))})
			}
		}
	}
	return out
}

// unreplicatedOf returns the unreplicated attempts on c's locks, as holds.
func (m *model) unreplicatedOf(c contention) []*hold {
	var out []*hold
	for _, hd := range m.unreplicated {
		if hd.R == c.name || c.res.With != "" && hd.R == c.res.With {
			out = append(out, hd)
		}
	}
	return out
}

// A contention is what the liveness checkers look at for one lock that
// callers waited for: its holds and waits, with those of the lock its
// waiters need too (Resource.With), and when waiters got it, in order.
type contention struct {
	name     string
	res      Resource
	hs       []*hold
	ws       []*wait
	acquired []int64
}

// contentions returns one contention per lock that callers waited for.
func (m *model) contentions() []contention {
	holds := byResource(m.holds, func(hd *hold) string { return hd.R })
	waits := byResource(m.waits, func(w *wait) string { return w.R })
	var out []contention
	for name, ws := range waits {
		c := contention{name: name, res: resourceOf(m.Resources, name), hs: holds[name], ws: ws}
		if c.res.Unleased {
			continue // a dead holder keeps its permits for good: no bound to check
		}
		if c.res.With != "" { // checked as one with the lock its waiters need too
			c.hs = slices.Concat(c.hs, holds[c.res.With])
			c.ws = slices.Concat(c.ws, waits[c.res.With])
		}
		for _, w := range c.ws {
			if w.OK {
				c.acquired = append(c.acquired, w.Ret)
			}
		}
		slices.Sort(c.acquired)
		out = append(out, c)
	}
	return out
}

// served reports whether a waiter got the lock after f, by deadline.
func (c contention) served(f, deadline int64) bool {
	i := sort.Search(len(c.acquired), func(i int) bool { return c.acquired[i] > f })
	return i < len(c.acquired) && c.acquired[i] <= deadline
}

// unserved returns a waiter that waited from before f to past deadline, or
// nil. (A killed worker's wait ends at its death.)
func (c contention) unserved(f, deadline int64) *wait {
	for _, w := range c.ws {
		if w.Inv <= f && w.Ret > deadline {
			return w
		}
	}
	return nil
}

// promptKinds are the primitives I9 checks: those whose waiters a dead
// party holds back for a heartbeat timeout at most.
var promptKinds = map[string]bool{"Mutex": true, "FencedMutex": true, "MultiMutex": true, "FairMutex": true, "Semaphore": true}

// promptExcused reports whether a fault other than the death of a waiter
// came near the lock going free (fr): from Recovery before it to the
// deadline, a fault of another kind, the death of a worker that died
// holding the lock (diedHolding: its hold occupies it for a lease, as does
// a part of it that a waiting MultiMutex took), or a death less than a
// round trip before the freeing hold's critical section ended, or after
// it: a waiter of that worker may have been handed the lock, or taken it,
// alive, and died holding it before its acquire returned, and an attempt
// it sent before it died may reach Redis after the release and take the
// lock for a lease (the history shows neither). A waiter that was dead a
// round trip before the release began can only have been handed the lock,
// which stays in its name for a heartbeat timeout at most: that is what I9
// checks.
func (m *model) promptExcused(fr freeing, deadline int64, diedHolding map[int]bool) bool {
	for ft := range m.faultsIn(fr.t-int64(m.Params.Recovery), deadline) {
		if !ft.kills() || ft.Start >= fr.by.Exit-int64(m.Params.RoundTrip) || diedHolding[ft.W] {
			return true
		}
	}
	return false
}

// A freeing is a moment at which hold by ended and left its lock with room
// for a waiter.
type freeing struct {
	t  int64
	by *hold
}

// freeings returns the moments at which a hold of res ended and left res
// with room for a waiter, with the hold that ended.
func (m *model) freeings(res Resource, hs []*hold) []freeing {
	type point struct {
		t     int64
		delta int
		hd    *hold
	}
	var pts []point
	for _, hd := range hs {
		pts = append(pts, point{hd.Acq, +1, hd})
		if end := m.occupied(hd); end != never {
			pts = append(pts, point{end, -1, hd})
		}
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].t < pts[j].t })
	room := res.room() // a semaphore's holders that fit, else one
	var out []freeing
	n := 0
	for _, p := range pts {
		n += p.delta
		if p.delta < 0 && n < room {
			out = append(out, freeing{p.t, p.hd})
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
		for ft := range m.faultsIn(f-recovery, deadline) {
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
	for f := range m.faultsIn(w.Inv, w.Ret) {
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
// its master killed (F15, when another holder got in), by the time its
// lease can have run out on the server. One cut off from Redis (F5, F23)
// is told by then too, within the timer's slack (Params.TimerSlack), and so
// is one whose renewals' replies F24 held back, counted from the later of
// the stall and its acquire.
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
		slack := m.Params.RoundTrip
		switch {
		case f.Kind == "F9" && f.Sub != "pubsub", f.Kind == "F3", f.Kind == "F2":
			c.observable = f.End
			c.bound = f.End + int64(m.Params.Interval)
		case f.cutsOff():
			// Its lease ends on the server a lease after the last request
			// that reached it, before the cut; the Client reckons it from
			// that request's sending, less a fiftieth, on its own clock,
			// whatever its calls wait for (F23: a reconnection that follows
			// another caller's deadline). Only the timer's and the
			// goroutines' wake-ups are allowed beyond (TimerSlack).
			c.observable = f.Start
			c.bound = f.Start + int64(m.Params.Lease)
			slack = m.timerSlack()
		case f.quorumServer():
			// A hold on a bare majority, one of whose servers the fault
			// took, renews no majority from then and ends at its lease
			// (F21 makes such a hold, unless it was taken before the cut);
			// one on more keeps a majority, and nobody else gets in.
			if hd := m.holdAt(f.W, f.G, f.Start); hd == nil || hd.Lost == 0 && !m.overlapped(hd) {
				continue
			}
			c.observable = f.Start
			c.bound = f.Start + int64(m.Params.Lease)
		case f.Kind == "F24":
			// The parked holder may have been returned its hold before the
			// replies came back, its renewals' replies among those held up
			// (see repliesHeld): lost, if it was told or another got in,
			// by the Client's clock within a lease of the later of the
			// stall and its acquire. One returned after (the usual case)
			// lost nothing to the fault.
			hd := m.holdFrom(f.W, f.G, f.Start)
			if hd == nil || hd.Acq >= f.End || hd.Lost == 0 && !m.overlapped(hd) {
				continue
			}
			c.hd = hd
			c.observable = f.Start
			c.bound = max(f.Start, hd.Acq) + int64(m.Params.Lease)
			slack = m.timerSlack()
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
		c.f, c.bound = f, c.bound+int64(slack)
		if c.hd == nil {
			c.hd = m.holdAt(f.W, f.G, f.Start)
		}
		// Nothing tells the holder of a fixed lease of a loss before the
		// lease's end, at which it stops (Resource.Fixed), nor the holder of
		// permits that have none (Resource.Unleased): not a loss here.
		if c.hd != nil && c.hd.Killed == 0 && !resourceOf(m.Resources, c.hd.R).Fixed && !resourceOf(m.Resources, c.hd.R).Unleased {
			out = append(out, c)
		}
	}
	return out
}

// timerSlack is I5's allowance for a cut-off holder (Params.TimerSlack;
// RoundTrip in a history from before it).
func (m *model) timerSlack() time.Duration {
	if m.Params.TimerSlack == 0 {
		return m.Params.RoundTrip
	}
	return m.Params.TimerSlack
}

// overlapped reports whether another holder that may not be inside together
// with hd entered its lock while hd was inside.
func (m *model) overlapped(hd *hold) bool {
	for _, o := range m.holds {
		if o != hd && o.R == hd.R && o.Enter > hd.Enter && o.Enter < hd.Exit &&
			!admissible(resourceOf(m.Resources, hd.R), map[*hold]bool{hd: true, o: true}) {
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

// holdFrom returns the first hold of worker w's goroutine g that was held
// at t or after it.
func (m *model) holdFrom(w, g int, t int64) *hold {
	for _, hd := range m.slots[[2]int{w, g}] {
		if t <= hd.Rel {
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

// checkAlive (I0) reports every worker process that ended unasked: no
// fault killed it and the coordinator had not told it to exit (a panic, a
// fatal error, an exit of its own). Its calls end at its death, as a killed
// worker's.
func (m *model) checkAlive() []Violation {
	var out []Violation
	for _, e := range m.Events {
		if e.K == Died {
			out = append(out, Violation{Invariant: I0, T: e.T, Detail: fmt.Sprintf("w%d died: %s", e.W, e.Err)})
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
	return "+" + ms(t-m.t0)
}
