package chaos

import "testing"

// onceRun returns the events of a Once run of worker w's goroutine g: Do called
// at inv, the function from acq to end (succeeding when ok), Do returning at
// rel (all in milliseconds).
func onceRun(w, g int, inv, acq, end, rel int64, ok bool) []Event {
	evs := cycle(w, g, "once", Exclusive, inv, acq, end)
	evs[4].T = rel * ms1
	if ok {
		evs = append(evs[:3:3], append([]Event{{T: end * ms1, W: w, G: g, K: Completed, R: "once"}}, evs[3:]...)...)
	}
	return evs
}

// reset is a Reset called at t0 and returned at t.
func reset(w, g int, t0, t int64) []Event {
	return []Event{{T: t0 * ms1, W: w, G: g, K: ResetCall, R: "once"}, {T: t * ms1, W: w, G: g, K: Reset, R: "once"}}
}

func TestOnceCompletesOnce(t *testing.T) {
	first := onceRun(1, 0, 0, 10, 20, 22, true)
	// A second success after the first was recorded, with no Reset: a violation.
	expect(t, history(nil, first, onceRun(2, 0, 5, 30, 40, 42, true)), I7, 0, 1)
	// With a Reset between the record and the second claim: fine.
	expect(t, history(nil, first, reset(3, 0, 24, 26), onceRun(2, 0, 5, 30, 40, 42, true)), I7, 0, 0)
	// A Reset that returned before the first function ended does not count.
	expect(t, history(nil, first, reset(3, 0, 1, 3), onceRun(2, 0, 5, 30, 40, 42, true)), I7, 0, 1)
	// A Reset whose worker died before it returned may have run after the
	// record; one that failed too (its reply lost).
	pending := []Event{{T: 24 * ms1, W: 3, G: 0, K: ResetCall, R: "once"}}
	expect(t, history(nil, first, pending, onceRun(2, 0, 5, 30, 40, 42, true)), I7, 0, 0)
	failed := reset(3, 0, 1, 26)
	failed[1].Err = "connection closed"
	expect(t, history(nil, first, failed, onceRun(2, 0, 5, 30, 40, 42, true)), I7, 0, 0)
	// A failed first run, or one whose Do failed (perhaps not recorded): fine.
	expect(t, history(nil, onceRun(1, 0, 0, 10, 20, 22, false), onceRun(2, 0, 5, 30, 40, 42, true)), I7, 0, 0)
	unrecorded := onceRun(1, 0, 0, 10, 20, 22, true)
	unrecorded[len(unrecorded)-1].Err = "could not be recorded"
	expect(t, history(nil, unrecorded, onceRun(2, 0, 5, 30, 40, 42, true)), I7, 0, 0)
	// The record deleted between (F9 DEL of the Once's keys): expected.
	del := []Fault{{Kind: "F9", Sub: "del", W: 1, G: 0, R: "once", Start: 25 * ms1, End: 25 * ms1}}
	expect(t, history(del, first, onceRun(2, 0, 5, 30, 40, 42, true)), I7, 1, 0)
	// Another resource's deletion excuses nothing.
	other := []Fault{{Kind: "F9", Sub: "del", W: 1, G: 0, R: "m", Start: 25 * ms1, End: 25 * ms1}}
	expect(t, history(other, first, onceRun(2, 0, 5, 30, 40, 42, true)), I7, 0, 1)
}

// add is a WaitGroup Add of delta by worker w's goroutine g, called at t0
// and returned at t; fail marks an error.
func add(w, g int, delta, t0, t int64, fail bool) []Event {
	e := Event{T0: t0 * ms1, T: t * ms1, W: w, G: g, K: Add, R: "wg", N: delta}
	if fail {
		e.Err = "negative"
	}
	return []Event{e}
}

// wgWait is a Wait by worker w's goroutine g, called at inv and returning nil
// at ret.
func wgWait(w, g int, inv, ret int64) []Event {
	return []Event{{T: inv * ms1, W: w, G: g, K: Invoke, R: "wg"}, {T: ret * ms1, W: w, G: g, K: Finished, R: "wg"}}
}

func TestWaitGroupWaitsForZero(t *testing.T) {
	adds := [][]Event{add(1, 1, 2, 0, 1, false), add(1, 2, -1, 10, 11, false), add(1, 3, -1, 20, 21, false)}
	// Returned after the last Done was called: fine.
	expect(t, history(nil, append(adds, wgWait(1, 0, 2, 22))...), I8, 0, 0)
	// Returned after the first Done only: the counter was still 1.
	expect(t, history(nil, append(adds, wgWait(1, 0, 2, 15))...), I8, 0, 1)
	// Returned before any Add returned (the counter may have been zero): fine.
	expect(t, history(nil, append(adds, wgWait(1, 0, 0, 0))...), I8, 0, 0)
	// A failed Add does not count: the counter may have been zero.
	failed := [][]Event{add(1, 1, 2, 0, 1, true), add(1, 2, -1, 10, 11, false)}
	expect(t, history(nil, append(failed, wgWait(1, 0, 2, 5))...), I8, 0, 0)
	// A FLUSHDB during the Wait set the counter to zero: fine.
	flush := []Fault{{Kind: "F9", Sub: "flushdb", Global: true, W: -1, G: -1, Start: 12 * ms1, End: 12 * ms1}}
	expect(t, history(flush, append(adds, wgWait(1, 0, 2, 15))...), I8, 0, 0)
	// After a FLUSHDB, only what came later counts: a Wait after it, with a
	// new Add(1) pending, returning early is a violation again.
	later := append(adds[:1:1], add(2, 1, 1, 30, 31, false), wgWait(2, 0, 32, 40))
	expect(t, history(flush, later...), I8, 0, 1)
	// A worker killed after its Add and one recorded Done: its second Done
	// may have been applied without a record, so another's Wait may return.
	kill := []Fault{{Kind: "F1", W: 1, G: 0, Start: 12 * ms1, End: 13 * ms1}}
	killed := [][]Event{add(1, 1, 2, 0, 1, false), add(1, 2, -1, 10, 11, false), wgWait(2, 0, 2, 15)}
	expect(t, history(kill, killed...), I8, 0, 0)
	expect(t, history(nil, killed...), I8, 0, 1) // without the kill: the counter was 1
}
