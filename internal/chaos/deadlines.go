package chaos

import (
	"fmt"
	"slices"
)

// A timedCall is one call whose return I10 checks: from its start to its
// return, and how long it had (Event.D).
type timedCall struct {
	W, G       int
	R          string
	What       string // the event that ended it
	Start, Ret int64
	Deadline   int64 // Start + D
	Overrun    int64 // Ret - Deadline, negative when it returned in time
}

// calls returns every call of the history that carries a deadline (Event.D),
// paired with its return: an acquire from its Invoke to the result that
// followed on its goroutine, a release or an Add from T0 to T.
func (m *model) calls() []timedCall {
	var out []timedCall
	open := map[[2]int]Event{} // (worker, goroutine) -> its pending Invoke
	for _, e := range m.Events {
		key := [2]int{e.W, e.G}
		switch e.K {
		case Invoke:
			if e.D > 0 {
				open[key] = e
			} else {
				delete(open, key)
			}
		case Acquired, AcquireFailed, Finished:
			inv, ok := open[key]
			if !ok {
				continue
			}
			delete(open, key)
			out = append(out, m.timed(e, inv.T, inv.D))
		case Released, Add:
			if e.D > 0 && e.T0 != 0 {
				out = append(out, m.timed(e, e.T0, e.D))
			}
		}
	}
	return out
}

// timed returns the call that started at start with d to run and ended with
// e.
func (m *model) timed(e Event, start, d int64) timedCall {
	c := timedCall{W: e.W, G: e.G, R: e.R, What: string(e.K), Start: start, Ret: e.T, Deadline: start + d}
	c.Overrun = c.Ret - c.Deadline
	return c
}

// checkDeadlines (I10): every call returns by its deadline plus CallSlack,
// whatever Redis does: hung, refusing, cut off, failing over. The deadline
// is its context's, or, for a call without one, the Client's call timeout.
// Only a stop of the caller's own process (F2) excuses an overrun: the call
// could not return while its process did not run.
func (m *model) checkDeadlines() []Violation {
	if m.Params.CallSlack == 0 {
		return nil
	}
	slack := int64(m.Params.CallSlack)
	var out []Violation
	for _, c := range m.calls() {
		if c.Overrun <= slack {
			continue
		}
		cause := m.stopped(c.W, c.Start, c.Ret)
		out = append(out, Violation{Invariant: I10, Expected: cause != "", Fault: cause, T: c.Ret, R: c.R,
			Detail: fmt.Sprintf("w%d/g%d: %s at %s, %s after its deadline (called at %s, %s to run)",
				c.W, c.G, c.What, m.at(c.Ret), ms(c.Overrun), m.at(c.Start), ms(c.Deadline-c.Start))})
	}
	return out
}

// stopped returns "F2" when worker w's process was stopped (SIGSTOP) at some
// time between from and to, "" otherwise.
func (m *model) stopped(w int, from, to int64) string {
	for _, f := range m.Faults {
		if f.Kind == "F2" && f.W == w && f.Start <= to && f.End >= from {
			return "F2"
		}
	}
	return ""
}

// overruns returns the calls' overruns past their deadlines (0 for a call
// that returned in time), in order, for the report.
func (m *model) overruns() []int64 {
	var out []int64
	for _, c := range m.calls() {
		out = append(out, max(0, c.Overrun))
	}
	slices.Sort(out)
	return out
}
