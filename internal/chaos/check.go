package chaos

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// The invariants.
const (
	I0  = "I0"  // no worker process dies unless a fault kills it
	I1  = "I1"  // at most one holder (a writer alone, or N permits)
	I2  = "I2"  // the fence never accepts a stale token; tokens grow
	I3  = "I3"  // no lost wake-ups
	I4  = "I4"  // FIFO for FairMutex
	I5  = "I5"  // a holder that lost its lease is told in time
	I6  = "I6"  // no leaks
	I7  = "I7"  // a Once's function completes once (until a Reset)
	I8  = "I8"  // a WaitGroup's Wait never returns while the counter is above zero
	I9  = "I9"  // a free lock reaches a waiter within a heartbeat timeout, dead waiters or not
	I10 = "I10" // every call returns by its deadline (or its bound) plus the slack
)

// Invariants lists them in order.
var Invariants = []string{I0, I1, I2, I3, I4, I5, I6, I7, I8, I9, I10}

// A Violation is one breach of an invariant. Expected ones are allowed by the
// fault that caused them (I1 under F2, F3, F5 and F9's deletions).
type Violation struct {
	Invariant string `json:"invariant"`
	Expected  bool   `json:"expected"`
	// Fault is the kind of the fault that excused an expected violation.
	Fault  string `json:"fault,omitempty"`
	T      int64  `json:"t"`
	R      string `json:"r,omitempty"`
	Detail string `json:"detail"`
}

// Check runs every checker over h.
func Check(h *History) []Violation {
	m := build(h)
	var out []Violation
	out = append(out, m.checkExclusion()...)
	out = append(out, m.checkFence()...)
	out = append(out, m.checkWakeups()...)
	out = append(out, m.checkFIFO()...)
	out = append(out, m.checkTold()...)
	out = append(out, m.checkLeaks()...)
	out = append(out, m.checkOnce()...)
	out = append(out, m.checkWaitGroup()...)
	out = append(out, m.checkPrompt()...)
	out = append(out, m.checkAlive()...)
	out = append(out, m.checkDeadlines()...)
	return out
}

// checkExclusion (I1) walks each resource's critical sections in time order
// and reports every entry that made too many holders inside. It is expected
// when one of the holders inside had its lease broken by a fault during its
// critical section.
func (m *model) checkExclusion() []Violation {
	var out []Violation
	sections := byResource(m.holds, func(hd *hold) string { return hd.R })
	for name, hs := range sections {
		res := resourceOf(m.Resources, name)
		type point struct {
			t     int64
			enter bool
			hd    *hold
		}
		var pts []point
		for _, hd := range hs {
			if hd.Enter != 0 {
				pts = append(pts, point{hd.Enter, true, hd}, point{hd.Exit, false, hd})
			}
		}
		// Exits before entries at the same instant: touching is not overlapping.
		sort.Slice(pts, func(i, j int) bool {
			if pts[i].t != pts[j].t {
				return pts[i].t < pts[j].t
			}
			return !pts[i].enter && pts[j].enter
		})
		inside := map[*hold]bool{}
		for _, p := range pts {
			if !p.enter {
				delete(inside, p.hd)
				continue
			}
			inside[p.hd] = true
			if admissible(res, inside) {
				continue
			}
			cause := ""
			var who []string
			for hd := range inside {
				who = append(who, fmt.Sprintf("w%d/g%d", hd.W, hd.G))
				if k := m.leaseBroken(hd, false); k != "" && (cause == "" || k < cause) {
					cause = k // the same one whatever the map's order
				}
			}
			if cause == "" && res.Unleased {
				cause = m.countLost(hs, p.t)
			}
			if cause == "" {
				cause = m.toldFirst(inside, p.t)
			}
			slices.Sort(who)
			out = append(out, Violation{Invariant: I1, Expected: cause != "", Fault: cause, T: p.t, R: name,
				Detail: fmt.Sprintf("%d holders inside: %v", len(inside), who)})
		}
	}
	return out
}

// countLost returns the kind of a fault that may have made Redis forget an
// Unleased lock's count (Fault.losesData) between the first hold of its name
// hs and t, "" when there is none. The count is then set again at the size
// while permits are taken, and their releases raise it above: too many
// holders for the rest of the name's epoch, by design (Redisson's RSemaphore
// does the same), so its overlaps are expected.
func (m *model) countLost(hs []*hold, t int64) string {
	from := t
	for _, hd := range hs {
		from = min(from, hd.Acq)
	}
	kind := ""
	for f := range m.faultsIn(from, t) {
		if f.losesData() && (kind == "" || f.Kind < kind) {
			kind = f.Kind
		}
	}
	return kind
}

// admissible reports whether the holders inside may be inside together.
func admissible(res Resource, inside map[*hold]bool) bool {
	writers, readers := 0, 0
	for hd := range inside {
		if hd.Mode == Shared {
			readers++
		} else {
			writers++
		}
	}
	switch {
	case writers > 1, writers == 1 && readers > 0:
		return false
	case res.Shared > 0 && readers*max(1, res.Weight) > res.Shared:
		return false // permits are counted, not holders
	}
	return true
}

// breaksLeases reports whether f may end leases: a fault that always may
// (see Fault.breaksLeases), or a restart with AOF (F4) that lasted longer
// than a lease renewed on time has left (two thirds of a lease): the
// guarantee holds only for a restart shorter than the remaining lease, and
// a longer one lets the restored lock expire before its holder can renew it.
func (m *model) breaksLeases(f Fault) bool {
	return f.breaksLeases() || f.Kind == "F4" && time.Duration(f.End-f.Start) >= m.Params.Lease*2/3
}

// leaseBroken returns the kind of a fault that breaks leases and hit hd's
// worker (or the server) while hd was held, "" when there is none: from the
// acquire's call (the hold may have begun in Redis at any time after it, say
// just before a SIGSTOP that delayed the reply's reading) to the end of the
// critical section. A fault that cut the worker off (F5, F23) counts only
// with cutOff: I1 excuses an overlap with its holder once that holder was
// told, not before (toldFirst).
func (m *model) leaseBroken(hd *hold, cutOff bool) string {
	for f := range m.faultsIn(hd.Inv, hd.Exit) {
		if f.cutsOff() && !cutOff {
			continue
		}
		if (m.breaksLeases(f) || m.restartBeforeRenewal(f, hd)) && (f.Global || f.W == hd.W) {
			return f.Kind
		}
	}
	return ""
}

// toldFirst returns the kind of a fault that may take a hold away from a
// holder that goes on running: one quorum server's (F18-F21), when one of
// the holders inside at t is that fault's parked holder, or one that cut
// the holder's worker off (F5, F23), or held its replies back (F24: see
// repliesHeld), when one of the holders inside at t is of that worker; and
// that holder was told of its loss at or before t (Done closed before the
// other entered), else "". The holder's Client reckons the lease by its own
// clock and must tell it before the lease can have run out where others can
// take the lock (a hold on a bare majority of a quorum is lost with one of
// its servers; a cut-off hold expires on the server): a rival before the
// holder was told is a violation. (Only a parked holder records that it was
// told, under the names of a MultiMutex's hold.)
func (m *model) toldFirst(inside map[*hold]bool, t int64) string {
	for hd := range inside {
		if hd.Lost == 0 || hd.Lost > t {
			continue
		}
		for f := range m.faultsIn(hd.Inv, hd.Exit) {
			if f.W == hd.W && (f.cutsOff() || f.quorumServer() && f.G == hd.G || repliesHeld(f, hd)) {
				return f.Kind
			}
		}
	}
	return ""
}

// repliesHeld reports whether f held back the replies of a connection of
// hd's worker (F24) while hd was held, and hd was told of its loss after
// the replies stopped: its renewals reached the server, their replies did
// not come back, and its Client, reckoning the lease from the last renewal
// it heard back from, counted it lost (and stopped renewing it) before the
// server could. Only a hold returned before the replies came back (Acq
// before the fault's End) can be such a hold: one returned from a reply
// read after the fault, the grant F24 holds back among them, was read with
// its lease by the Client's clock still current or is no hold at all, and
// a rival beside it is a violation, told or not.
func repliesHeld(f Fault, hd *hold) bool {
	return f.Kind == "F24" && hd.Acq < f.End && hd.Lost >= f.Start
}

// restartBeforeRenewal reports whether f is a restart with AOF (F4) that
// began before hd's first renewal can have landed, hd being a hold handed
// through Redis: until that renewal its lease runs to the waiter's heartbeat
// deadline, which may be anywhere up to a heartbeat timeout away, so a
// restart of any length may outlast it. (The renewal comes at most half a
// heartbeat timeout after the hold was taken, and takes a round trip.)
func (m *model) restartBeforeRenewal(f Fault, hd *hold) bool {
	return f.Kind == "F4" && hd.Handed && f.Start < hd.Acq+int64(m.Params.Heartbeat/2+m.Params.RoundTrip)
}

// checkFence (I2) checks the fenced writes and the grants. A write accepted
// with a token lower than one already accepted before it was called is a
// stale write that got through; a grant whose token is not above every grant
// completed before it was called, or repeats one, breaks the tokens' order.
// No fault excuses either.
func (m *model) checkFence() []Violation {
	var out []Violation
	for name, ws := range byResource(m.writes, func(w write) string { return w.R }) {
		for _, v := range staleAccepted(ws, false) {
			out = append(out, Violation{Invariant: I2, T: v.T, R: name,
				Detail: fmt.Sprintf("w%d/g%d's write with token %d accepted after a write with token %d", v.W, v.G, v.Tok, v.seen)})
		}
	}
	var grants []write
	for _, w := range m.waits {
		if w.OK && m.Resources[w.R].Fenced {
			grants = append(grants, write{W: w.W, G: w.G, R: w.R, Tok: w.hold.Tok, T0: w.Inv, T: w.Ret, Accepted: true})
		}
	}
	for name, gs := range byResource(grants, func(w write) string { return w.R }) {
		seen := map[uint64]write{}
		for _, g := range gs {
			if g.Tok == 0 {
				out = append(out, Violation{Invariant: I2, T: g.T, R: name, Detail: fmt.Sprintf("w%d/g%d granted no token", g.W, g.G)})
			} else if d, dup := seen[g.Tok]; dup {
				out = append(out, Violation{Invariant: I2, T: g.T, R: name,
					Detail: fmt.Sprintf("token %d granted to w%d/g%d and w%d/g%d", g.Tok, d.W, d.G, g.W, g.G)})
			}
			seen[g.Tok] = g
		}
		for _, v := range staleAccepted(gs, true) {
			out = append(out, Violation{Invariant: I2, T: v.T, R: name,
				Detail: fmt.Sprintf("w%d/g%d granted token %d, not above %d granted before its call", v.W, v.G, v.Tok, v.seen)})
		}
	}
	return out
}

// A staleWrite is an accepted write and the higher token seen before it.
type staleWrite struct {
	write
	seen uint64
}

// staleAccepted returns the accepted writes whose token is lower than that of
// an accepted write that returned before they were called; with strict, also
// those whose token is equal to it.
func staleAccepted(ws []write, strict bool) []staleWrite {
	var done, calls []write
	for _, w := range ws {
		if w.Accepted {
			done = append(done, w)
			calls = append(calls, w)
		}
	}
	slices.SortFunc(done, func(a, b write) int { return cmp64(a.T, b.T) })
	slices.SortFunc(calls, func(a, b write) int { return cmp64(a.T0, b.T0) })
	var out []staleWrite
	var highest uint64
	i := 0
	for _, c := range calls {
		for ; i < len(done) && done[i].T < c.T0; i++ {
			highest = max(highest, done[i].Tok)
		}
		if c.Tok < highest || strict && i > 0 && c.Tok == highest {
			out = append(out, staleWrite{c, highest})
		}
	}
	return out
}

func cmp64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ms formats a duration in nanoseconds as milliseconds.
func ms(ns int64) string { return fmt.Sprintf("%.0f ms", float64(ns)/float64(time.Millisecond)) }
