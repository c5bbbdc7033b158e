package chaos

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const ms1 = int64(time.Millisecond)

var testParams = Params{Lease: time.Second, Interval: 333 * time.Millisecond, Recovery: 3 * time.Second,
	RoundTrip: 100 * time.Millisecond, WakeSlack: 500 * time.Millisecond, Heartbeat: 300 * time.Millisecond,
	CallSlack: 100 * time.Millisecond}

var testResources = map[string]Resource{
	"m":    {Name: "m", Primitive: "Mutex"},
	"rw":   {Name: "rw", Primitive: "RWMutex"},
	"sem":  {Name: "sem", Primitive: "Semaphore", Shared: 2},
	"fair": {Name: "fair", Primitive: "FairMutex", FIFO: true},
	"fm":   {Name: "fm", Primitive: "FencedMutex", Fenced: true},
	"once": {Name: "once", Primitive: "Once"},
	"wg":   {Name: "wg", Primitive: "WaitGroup"},
	"mm":   {Name: "mm", Primitive: "MultiMutex", With: "m"},
	"xsem": {Name: "xsem", Primitive: "ExpirableSemaphore", Shared: 2, Fixed: true},
	"csem": {Name: "csem", Primitive: "CountingSemaphore", Shared: 2, Unleased: true},
	// Each holder takes 2^52-1 permits of 2^53-1: two fit, a third does not.
	"bigsem": {Name: "bigsem", Primitive: "Semaphore", Shared: 1<<53 - 1, Weight: 1<<52 - 1},
}

// cycle returns the events of one waiting lock cycle of worker w's goroutine
// g on r: called at inv, acquired at acq, inside from acq to rel, released
// at rel (all in milliseconds).
func cycle(w, g int, r, mode string, inv, acq, rel int64) []Event {
	return []Event{
		{T: inv * ms1, W: w, G: g, K: Invoke, R: r, Mode: mode},
		{T: acq * ms1, W: w, G: g, K: Acquired, R: r, Mode: mode},
		{T: acq * ms1, W: w, G: g, K: Enter, R: r, Mode: mode},
		{T: rel * ms1, W: w, G: g, K: Exit, R: r, Mode: mode},
		{T: rel * ms1, W: w, G: g, K: Released, R: r, Mode: mode, T0: rel * ms1},
	}
}

func history(faults []Fault, evs ...[]Event) *History {
	h := &History{Faults: faults, Resources: testResources, Params: testParams, End: 60_000 * ms1}
	for _, e := range evs {
		h.Events = append(h.Events, e...)
	}
	return h
}

// count returns how many violations of inv, expected and unexpected, vs has.
func count(vs []Violation, inv string) (expected, unexpected int) {
	for _, v := range vs {
		if v.Invariant == inv {
			if v.Expected {
				expected++
			} else {
				unexpected++
			}
		}
	}
	return expected, unexpected
}

func expect(t *testing.T, h *History, inv string, wantExpected, wantUnexpected int) {
	t.Helper()
	vs := Check(h)
	e, u := count(vs, inv)
	if e != wantExpected || u != wantUnexpected {
		t.Errorf("%s: %d expected, %d unexpected; want %d, %d (all: %+v)", inv, e, u, wantExpected, wantUnexpected, vs)
	}
}

func TestExclusion(t *testing.T) {
	// Back to back, touching: fine.
	expect(t, history(nil, cycle(1, 0, "m", Exclusive, 0, 10, 20), cycle(2, 0, "m", Exclusive, 5, 20, 30)), I1, 0, 0)
	// Overlapping with no fault: a violation.
	overlap := [][]Event{cycle(1, 0, "m", Exclusive, 0, 10, 50), cycle(2, 0, "m", Exclusive, 5, 20, 30)}
	expect(t, history(nil, overlap...), I1, 0, 1)
	// The same while worker 1 was stopped in its critical section: expected.
	stop := []Fault{{Kind: "F2", W: 1, G: 0, R: "m", Start: 12 * ms1, End: 40 * ms1}}
	expect(t, history(stop, overlap...), I1, 1, 0)
	// Stopping the other worker, or a fault that does not break leases, does not excuse it.
	expect(t, history([]Fault{{Kind: "F2", W: 3, G: -1, Start: 12 * ms1, End: 40 * ms1}}, overlap...), I1, 0, 1)
	expect(t, history([]Fault{{Kind: "F9", Sub: "pubsub", W: -1, G: -1, Global: true, Start: 12 * ms1, End: 12 * ms1}}, overlap...), I1, 0, 1)
	expect(t, history([]Fault{{Kind: "F9", Sub: "flushdb", W: -1, G: -1, Global: true, Start: 12 * ms1, End: 12 * ms1}}, overlap...), I1, 1, 0)
	// A restart with AOF breaks leases only when it outlasts what a renewed
	// lease has left (two thirds of the lease: 667 ms with this test's 1 s).
	restart := func(ms int64) []Fault {
		return []Fault{{Kind: "F4", W: 1, G: 0, R: "m", Global: true, Start: 12 * ms1, End: (12 + ms) * ms1}}
	}
	expect(t, history(restart(20), overlap...), I1, 0, 1)
	expect(t, history(restart(700), overlap...), I1, 1, 0)
	// A hold handed through Redis lasts to its waiter's heartbeat deadline
	// until its first renewal (at most half a heartbeat timeout, 150 ms
	// here, plus a round trip after it was taken): a restart before then
	// may outlast it, whatever its length; one after, only as any other.
	handed := slices.Concat([]Event{{T: 10 * ms1, W: 1, G: 0, K: Handed, R: "m"}}, overlap[0])
	expect(t, history(restart(20), handed, overlap[1]), I1, 1, 0)
	long := slices.Concat([]Event{{T: 10 * ms1, W: 1, G: 0, K: Handed, R: "m"}}, cycle(1, 0, "m", Exclusive, 0, 10, 600))
	late := []Fault{{Kind: "F4", W: 1, G: 0, R: "m", Global: true, Start: 400 * ms1, End: 420 * ms1}}
	expect(t, history(late, long, cycle(2, 0, "m", Exclusive, 405, 410, 415)), I1, 0, 1)
	// Readers together are fine, a writer among them is not.
	expect(t, history(nil, cycle(1, 0, "rw", Shared, 0, 10, 50), cycle(2, 0, "rw", Shared, 0, 20, 30)), I1, 0, 0)
	expect(t, history(nil, cycle(1, 0, "rw", Shared, 0, 10, 50), cycle(2, 0, "rw", Exclusive, 0, 20, 30)), I1, 0, 1)
	// A Semaphore of 2: two inside are fine, a third is not.
	two := [][]Event{cycle(1, 0, "sem", Shared, 0, 10, 50), cycle(2, 0, "sem", Shared, 0, 20, 60)}
	expect(t, history(nil, two...), I1, 0, 0)
	expect(t, history(nil, append(two, cycle(3, 0, "sem", Shared, 0, 30, 40))...), I1, 0, 1)
	// A killed holder is inside until it died.
	killed := cycle(1, 0, "m", Exclusive, 0, 10, 100)[:3]
	kill := []Fault{{Kind: "F1", W: 1, G: 0, R: "m", Start: 40 * ms1, End: 40 * ms1}}
	expect(t, history(kill, killed, cycle(2, 0, "m", Exclusive, 5, 30, 35)), I1, 0, 1)
	expect(t, history(kill, killed, cycle(2, 0, "m", Exclusive, 5, 45, 50)), I1, 0, 0)
}

func writeEvent(w int, k Kind, tok uint64, t0, t int64) []Event {
	return []Event{{T: t * ms1, T0: t0 * ms1, W: w, K: k, R: "fm", Tok: tok}}
}

func TestFence(t *testing.T) {
	// A lower token accepted after a higher one returned: stale write got through.
	expect(t, history(nil, writeEvent(1, Write, 5, 0, 10), writeEvent(2, Write, 4, 20, 30)), I2, 0, 1)
	// Rejected, it is the fence at work; concurrent calls are not ordered.
	expect(t, history(nil, writeEvent(1, Write, 5, 0, 10), writeEvent(2, Stale, 4, 20, 30)), I2, 0, 0)
	expect(t, history(nil, writeEvent(1, Write, 5, 0, 10), writeEvent(2, Write, 4, 5, 30)), I2, 0, 0)
	// The same holder writing twice with its token is fine.
	expect(t, history(nil, writeEvent(1, Write, 5, 0, 10), writeEvent(1, Write, 5, 20, 30)), I2, 0, 0)
	// Even under a fault that breaks leases, nothing excuses a stale write.
	stop := []Fault{{Kind: "F2", W: 2, G: 0, Start: 0, End: 25 * ms1}}
	expect(t, history(stop, writeEvent(1, Write, 5, 0, 10), writeEvent(2, Write, 4, 20, 30)), I2, 0, 1)

	grant := func(w int, tok uint64, inv, acq int64) []Event {
		evs := cycle(w, 0, "fm", Exclusive, inv, acq, acq+1)
		evs[1].Tok = tok
		return evs
	}
	expect(t, history(nil, grant(1, 7, 0, 10), grant(2, 8, 20, 30)), I2, 0, 0)
	expect(t, history(nil, grant(1, 7, 0, 10), grant(2, 7, 20, 30)), I2, 0, 2) // repeated, and not above
	expect(t, history(nil, grant(1, 7, 0, 10), grant(2, 6, 20, 30)), I2, 0, 1)
	expect(t, history(nil, grant(1, 7, 0, 10), grant(2, 6, 5, 30)), I2, 0, 0) // concurrent calls
}

func TestWakeups(t *testing.T) {
	holder := cycle(1, 0, "m", Exclusive, 0, 10, 100)
	stuck := []Event{{T: 50 * ms1, W: 2, G: 0, K: Invoke, R: "m", Mode: Exclusive}}
	expect(t, history(nil, holder, stuck), I3, 0, 1)
	// Served soon after the release: fine; served a lease later: too.
	expect(t, history(nil, holder, cycle(2, 0, "m", Exclusive, 50, 101, 110)), I3, 0, 0)
	expect(t, history(nil, holder, cycle(2, 0, "m", Exclusive, 50, 1400, 1410)), I3, 0, 0)
	expect(t, history(nil, holder, cycle(2, 0, "m", Exclusive, 50, 1700, 1710)), I3, 0, 1)
	// A killed holder occupies the lock for a lease after its death, and the
	// fault gives the waiter Recovery plus the slack from there.
	killed := cycle(1, 0, "m", Exclusive, 0, 10, 100)[:3]
	kill := []Fault{{Kind: "F1", W: 1, G: 0, R: "m", Start: 40 * ms1, End: 40 * ms1}}
	// (deadline: 40 + 3000 + 500 ms).
	expect(t, history(kill, killed, cycle(2, 0, "m", Exclusive, 50, 3500, 5000)), I3, 0, 0)
	expect(t, history(kill, killed, cycle(2, 0, "m", Exclusive, 50, 3600, 5000)), I3, 0, 1)
	// A waiter that nobody was waiting behind is no lost wake-up.
	expect(t, history(nil, holder), I3, 0, 0)
	// A MultiMutex waiting on mm needs m too: mm free while m is held (here
	// by one holder after another for 3 s) is no lost wake-up, but both free
	// with the waiter unserved is.
	onMM := cycle(1, 0, "mm", Exclusive, 0, 10, 100)
	mmWaiter := []Event{{T: 50 * ms1, W: 2, G: 0, K: Invoke, R: "mm", Mode: Exclusive}}
	busyM := slices.Concat(cycle(3, 0, "m", Exclusive, 0, 90, 1500), cycle(3, 1, "m", Exclusive, 1400, 1510, 3000))
	expect(t, history(nil, onMM, mmWaiter, busyM), I3, 0, 1) // unserved after m's last release, at 3 s
	expect(t, history(nil, onMM, busyM, cycle(2, 0, "mm", Exclusive, 50, 3100, 3200)), I3, 0, 0)
	expect(t, history(nil, onMM, mmWaiter), I3, 0, 1)
}

// I9: within a heartbeat timeout (300 ms) plus the slack of a lock going
// free, a waiter gets it, whoever died waiting meanwhile.
func TestPrompt(t *testing.T) {
	holder := cycle(1, 0, "m", Exclusive, 0, 10, 100)
	expect(t, history(nil, holder, cycle(2, 0, "m", Exclusive, 50, 850, 860)), I9, 0, 0)
	late := cycle(2, 0, "m", Exclusive, 50, 1000, 1010) // within I3's lease, past I9's bound
	expect(t, history(nil, holder, late), I3, 0, 0)
	expect(t, history(nil, holder, late), I9, 0, 1)
	// The item the invariant is for: a waiter of another worker died (in
	// the queue, say, and was handed the lock) more than a round trip
	// (100 ms) before the release began; the others are still due.
	holder2 := cycle(1, 0, "m", Exclusive, 0, 10, 200)
	late2 := cycle(2, 0, "m", Exclusive, 50, 1100, 1110) // 200 + 300 + 500 < 1100
	deadWaiter := []Event{{T: 20 * ms1, W: 3, G: 0, K: Invoke, R: "m", Mode: Exclusive}}
	waiterKilled := []Fault{{Kind: "F1", W: 3, G: 1, R: "fair", Start: 60 * ms1, End: 60 * ms1}}
	expect(t, history(waiterKilled, holder2, deadWaiter, late2), I9, 0, 1)
	// ... and the dead waiter's own wait is not counted.
	expect(t, history(waiterKilled, holder2, deadWaiter, cycle(2, 0, "m", Exclusive, 50, 950, 960)), I9, 0, 0)
	// A waiter that died after the release began may have taken the lock
	// alive and died holding it before its acquire returned: I3's.
	justAfter := []Fault{{Kind: "F1", W: 3, G: 1, R: "fair", Start: 202 * ms1, End: 202 * ms1}}
	expect(t, history(justAfter, holder2, deadWaiter, late2), I9, 0, 0)
	// So may one that died less than a round trip before: an attempt it
	// sent before it died can reach Redis after the release and take the
	// lock for a lease (a command in flight outlives its sender).
	inFlight := []Fault{{Kind: "F1", W: 3, G: 1, R: "fair", Start: 150 * ms1, End: 150 * ms1}}
	expect(t, history(inFlight, holder2, deadWaiter, late2), I9, 0, 0)
	// A holder that died occupies the lock for a lease: I3's.
	killed := cycle(1, 0, "m", Exclusive, 0, 10, 100)[:3]
	holderKilled := []Fault{{Kind: "F1", W: 1, G: 0, R: "m", Start: 40 * ms1, End: 40 * ms1}}
	expect(t, history(holderKilled, killed, cycle(2, 0, "m", Exclusive, 50, 1500, 1600)), I9, 0, 0)
	// A MultiMutex whose worker died while it held a part of its names (it
	// waited for the rest) occupies that part for a lease: I3's. Having
	// given a part back, or without one, its death excuses nothing.
	mmHolder := cycle(1, 0, "mm", Exclusive, 0, 10, 200)
	mmLate := cycle(2, 0, "mm", Exclusive, 50, 1100, 1110)
	deadMM := []Event{{T: 20 * ms1, W: 3, G: 0, K: Invoke, R: "mm", Mode: Exclusive}}
	deadPart := append(slices.Clone(deadMM), Event{T: 30 * ms1, W: 3, G: 0, K: Part, R: "mm"})
	expect(t, history(waiterKilled, mmHolder, deadPart, mmLate), I9, 0, 0)
	expect(t, history(waiterKilled, mmHolder, deadMM, mmLate), I9, 0, 1)
	gaveBack := append(slices.Clone(deadPart), Event{T: 40 * ms1, W: 3, G: 0, K: AcquireFailed, R: "mm"})
	expect(t, history(waiterKilled, mmHolder, gaveBack, mmLate), I9, 0, 1)
	// An attempt that took the lock and gave it back because its replicas
	// did not acknowledge it (a WithSyncReplicas call, while its replica
	// lags) held the lock meanwhile: it was not free until then. One that
	// ended before the release excuses nothing.
	notAcked := `redisync: Mutex "m": acquisition not acknowledged by enough replicas: 0 of 1 acknowledged within 500ms`
	unreplicated := []Event{{T: 90 * ms1, W: 4, G: 1, K: Invoke, R: "m", Mode: Exclusive},
		{T: 700 * ms1, W: 4, G: 1, K: AcquireFailed, R: "m", Err: notAcked}}
	expect(t, history(nil, holder, unreplicated, late), I9, 0, 0)
	before := []Event{{T: 10 * ms1, W: 4, G: 1, K: Invoke, R: "m", Mode: Exclusive},
		{T: 60 * ms1, W: 4, G: 1, K: AcquireFailed, R: "m", Err: notAcked}}
	expect(t, history(nil, holder, before, late), I9, 0, 1)
	// Any other fault near: I3's.
	paused := []Fault{{Kind: "F2", W: 2, G: 0, R: "m", Start: 200 * ms1, End: 500 * ms1}}
	expect(t, history(paused, holder, late), I9, 0, 0)
	// A FairMutex, a Semaphore, a MultiMutex's pair are checked too; an
	// RWMutex (a dead writer's claim holds readers back for 3 s) is not.
	for _, r := range []string{"fair", "sem", "fm"} {
		expect(t, history(nil, cycle(1, 0, r, Exclusive, 0, 10, 100), cycle(2, 0, r, Exclusive, 50, 1000, 1010)), I9, 0, 1)
	}
	expect(t, history(nil, cycle(1, 0, "mm", Exclusive, 0, 10, 100), cycle(2, 0, "mm", Exclusive, 50, 1000, 1010)), I9, 0, 1)
	expect(t, history(nil, cycle(1, 0, "rw", Exclusive, 0, 10, 100), cycle(2, 0, "rw", Exclusive, 50, 1000, 1010)), I9, 0, 0)
	// A history without a heartbeat timeout (from before I9) is not checked.
	h := history(nil, holder, late)
	h.Params.Heartbeat = 0
	expect(t, h, I9, 0, 0)
}

func TestFIFO(t *testing.T) {
	a := cycle(1, 0, "fair", Exclusive, 0, 40, 45)
	a = append(a[:1], append([]Event{{T: 10 * ms1, W: 1, G: 0, K: Queued, R: "fair"}}, a[1:]...)...)
	b := cycle(2, 0, "fair", Exclusive, 20, 30, 35)
	expect(t, history(nil, a, b), I4, 0, 1)
	// Called before A's place was confirmed: no order between them.
	expect(t, history(nil, a, cycle(2, 0, "fair", Exclusive, 5, 30, 35)), I4, 0, 0)
	// In order: fine.
	expect(t, history(nil, a, cycle(2, 0, "fair", Exclusive, 20, 46, 50)), I4, 0, 0)
	// A's worker was cut off while it waited: its place may be gone.
	cut := []Fault{{Kind: "F5", W: 1, G: -1, Start: 15 * ms1, End: 25 * ms1}}
	expect(t, history(cut, a, b), I4, 0, 0)
	// A lost its place (its heartbeat lapsed) and queued again at the end
	// after B was called: its new place is behind B's. Queued again before
	// B was called, it is still ahead of B.
	for _, c := range []struct {
		at   int64
		want int
	}{{25, 0}, {15, 1}} {
		again := slices.Insert(slices.Clone(a), 2, Event{T: c.at * ms1, W: 1, G: 0, K: Queued, R: "fair", Err: "queued again"})
		h := history(nil, again, b)
		expect(t, h, I4, 0, c.want)
		if r := Summarize(h, Check(h)); r.Requeued != 1 || r.QuietRequeues != 1 {
			t.Errorf("re-queued at %d ms: report counts %d re-queues, %d away from faults; want 1, 1", c.at, r.Requeued, r.QuietRequeues)
		}
	}
	// A plain Mutex has no order.
	for i := range a {
		a[i].R = "m"
		b[i%len(b)].R = "m"
	}
	expect(t, history(nil, a, b), I4, 0, 0)
}

func TestTold(t *testing.T) {
	parked := cycle(1, 0, "m", Exclusive, 0, 10, 2000)
	del := []Fault{{Kind: "F9", Sub: "del", W: 1, G: 0, R: "m", Start: 100 * ms1, End: 100 * ms1}}
	lost := func(at int64) []Event { return []Event{{T: at * ms1, W: 1, G: 0, K: Lost, R: "m"}} }
	expect(t, history(del, parked[:3], lost(400), parked[3:]), I5, 0, 0)
	expect(t, history(del, parked[:3], lost(600), parked[3:]), I5, 0, 1)
	expect(t, history(del, parked), I5, 0, 1)
	// Cut off: told by the time the lease can have run out on the server.
	cut := []Fault{{Kind: "F5", W: 1, G: 0, R: "m", Start: 100 * ms1, End: 1500 * ms1}}
	expect(t, history(cut, parked[:3], lost(1050), parked[3:]), I5, 0, 0)
	expect(t, history(cut, parked[:3], lost(1250), parked[3:]), I5, 0, 1)
	// A fault that takes no lease (latency) asks nothing.
	lat := []Fault{{Kind: "F6", W: 1, G: 0, R: "m", Start: 100 * ms1, End: 1500 * ms1}}
	expect(t, history(lat, parked), I5, 0, 0)
	// Nothing tells the holder of a fixed lease (an ExpirableSemaphore's
	// permit) of a deletion: it stops at its lease's end, and I5 asks
	// nothing of it. A Mutex's holder under the same fault is asked.
	xparked := cycle(1, 0, "xsem", Shared, 0, 10, 1000)
	xdel := []Fault{{Kind: "F9", Sub: "del", W: 1, G: 0, R: "xsem", Start: 100 * ms1, End: 100 * ms1}}
	expect(t, history(xdel, xparked), I5, 0, 0)
}

// A semaphore other than Semaphore (an ExpirableSemaphore) is free for a
// waiter when fewer than its size hold it (I3), and holds too many when more
// do (I1).
func TestExpirableSemaphoreRoom(t *testing.T) {
	two := slices.Concat(cycle(1, 0, "xsem", Shared, 0, 10, 100), cycle(2, 0, "xsem", Shared, 0, 10, 5000))
	stuck := []Event{{T: 50 * ms1, W: 3, G: 0, K: Invoke, R: "xsem", Mode: Shared}}
	expect(t, history(nil, two, stuck), I3, 0, 2) // free at 100 ms (one of two inside), and at 5 s
	expect(t, history(nil, two, cycle(3, 0, "xsem", Shared, 50, 200, 300)), I3, 0, 0)
	expect(t, history(nil, two, cycle(3, 0, "xsem", Shared, 50, 60, 300)), I1, 0, 1)
}

func TestLeaks(t *testing.T) {
	expect(t, history(nil, []Event{{T: 1, W: 1, K: Leak, R: "goroutines", N: 0}}), I6, 0, 0)
	expect(t, history(nil, []Event{{T: 1, W: 1, K: Leak, R: "goroutines", N: 2, Err: "x"}}), I6, 0, 1)
}

func TestReport(t *testing.T) {
	h := history([]Fault{{Kind: "F1", W: 1, G: 0, R: "m", Start: 3000 * ms1, End: 3000 * ms1}},
		cycle(1, 0, "m", Exclusive, 0, 10, 20), cycle(2, 0, "m", Exclusive, 15, 21, 30),
		cycle(2, 0, "m", Exclusive, 3960, 3960, 3961), writeEvent(2, Stale, 3, 25, 26))
	r := Summarize(h, Check(h))
	if r.Ops["Mutex"]["acq"] != 3 || r.Ops["FencedMutex"]["stale"] != 1 || r.StaleRejected != 1 {
		t.Errorf("ops %v, stale %d", r.Ops, r.StaleRejected)
	}
	if r.Faults["F1"] != 1 || r.TTR["F1"].N != 1 || r.TTR["F1"].P50 != 960 {
		t.Errorf("faults %v, ttr %+v", r.Faults, r.TTR)
	}
	if r.Handover.N != 1 || r.Handover.P50 != 1 {
		t.Errorf("handover %+v", r.Handover)
	}
	if r.Failed() {
		t.Errorf("failed: %+v", r.Unexpected)
	}
	table := r.Table()
	for _, want := range []string{"| Mutex | 6 |", "| F1 SIGKILL of a holder | 1 | 0 ms | 0 ms | 960 ms", "| I1 | 0 | 0 |  |"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

// TestExclusionFailover checks the attribution of an overlap to the faults
// of a replicated topology: an unplanned failover (F15) and a Sentinel's
// planned one (F13) may lose the holder's acquire, Redis Cluster's planned
// failover, a slot migration and a replica cut off lose nothing.
func TestExclusionFailover(t *testing.T) {
	a := cycle(1, 0, "m", Exclusive, 0, 10, 3000)
	b := cycle(2, 0, "m", Exclusive, 100, 2000, 2100)
	for _, c := range []struct {
		kind, sub string
		global    bool
		excuses   bool
	}{
		{"F15", "cluster", true, true}, {"F15", "sentinel", true, true}, {"F13", "sentinel", true, true},
		{"F13", "cluster", true, false}, {"F14", "cluster", true, false}, {"F16", "cluster 127.0.0.1:1", false, false},
	} {
		f := []Fault{{Kind: c.kind, Sub: c.sub, Global: c.global, W: 3, G: 0, R: "x", Start: 50 * ms1, End: 1500 * ms1}}
		if c.excuses {
			expect(t, history(f, a, b), I1, 1, 0)
			if r := Summarize(history(f, a, b), Check(history(f, a, b))); r.Violations[I1].ByFault[c.kind] != 1 {
				t.Errorf("%s: the violation is not attributed to it: %+v", c.kind, r.Violations[I1])
			}
		} else {
			expect(t, history(f, a, b), I1, 0, 1)
		}
	}
}

// TestToldAfterFailover checks I5 after a failover that may lose a parked
// hold: when another holder got in, the parked one must have been told, by
// its lease's end after its master was killed (F15), within a renewal
// interval of the end of a Sentinel failover (F13), whose old primary goes on
// renewing until it is demoted; when nobody got in, the hold may have
// survived and nothing is asked.
func TestToldAfterFailover(t *testing.T) {
	parked := cycle(1, 0, "m", Exclusive, 0, 10, 8000)
	lost := func(at int64) []Event { // parked, told at at (before it exits)
		return slices.Insert(slices.Clone(parked), 3, Event{T: at * ms1, W: 1, G: 0, K: Lost, R: "m"})
	}
	other := cycle(2, 0, "m", Exclusive, 100, 2500, 2510)
	for _, c := range []struct {
		kind       string
		told, late int64 // in time, and too late
	}{
		{"F15", 1050, 3000}, // the bound: its lease (1 s) and a round trip after the fault
		{"F13", 2400, 2700}, // the bound: an interval (333 ms) and a round trip after its end
	} {
		f := []Fault{{Kind: c.kind, Sub: "sentinel", Global: true, W: 1, G: 0, R: "m", Start: 100 * ms1, End: 2000 * ms1}}
		expect(t, history(f, lost(c.told), other), I5, 0, 0)
		expect(t, history(f, parked, other), I5, 0, 1) // never told
		expect(t, history(f, lost(c.late), other), I5, 0, 1)
		expect(t, history(f, parked), I5, 0, 0) // nobody got in: the hold may have survived
	}
	// Redis Cluster's planned failover loses nothing: a holder that lost its
	// hold there is not excused (I1), and I5 asks nothing more of it.
	f := []Fault{{Kind: "F13", Sub: "cluster", Global: true, W: 1, G: 0, R: "m", Start: 100 * ms1, End: 2000 * ms1}}
	expect(t, history(f, parked, other), I5, 0, 0)
}

// TestExclusionStoppedBeforeReading checks that a hold taken in Redis just
// before its worker was stopped, whose reply was read after the stop, counts
// as hit by the stop.
func TestExclusionStoppedBeforeReading(t *testing.T) {
	late := cycle(1, 0, "m", Exclusive, 0, 3050, 3060) // called before the stop, returned after it
	stop := []Fault{{Kind: "F2", W: 1, G: 1, R: "x", Start: 10 * ms1, End: 3000 * ms1}}
	expect(t, history(stop, late, cycle(2, 0, "m", Exclusive, 5, 3055, 3058)), I1, 1, 0)
	expect(t, history(nil, late, cycle(2, 0, "m", Exclusive, 5, 3055, 3058)), I1, 0, 1)
}

// TestExclusionHandover checks that a hold handed over locally counts as
// taken when the first hold of its chain was called for: a fault that broke
// the chain's lease before the handover still explains an overlap.
func TestExclusionHandover(t *testing.T) {
	first := cycle(1, 7, "m", Exclusive, 0, 10, 20)
	handed := cycle(1, 8, "m", Exclusive, 18, 20, 3100) // called after the deletion
	handed = append([]Event{handed[0], {T: 20 * ms1, W: 1, G: 8, K: Handover, R: "m"}}, handed[1:]...)
	other := cycle(2, 0, "m", Exclusive, 5, 3000, 3010)
	del := []Fault{{Kind: "F9", Sub: "del", W: 1, G: 7, R: "m", Start: 15 * ms1, End: 16 * ms1}}
	expect(t, history(del, first, handed, other), I1, 1, 0)
	expect(t, history(nil, first, handed, other), I1, 0, 1)
	// Without the handover the second hold began after the deletion.
	expect(t, history(del, first, append(handed[:1:1], handed[2:]...), other), I1, 0, 1)
}

// An excerpt shows the faults and the events on the violation's lock (and
// the lock its waiters need too) near it, in time order, and nothing else.
func TestExcerpt(t *testing.T) {
	h := history([]Fault{{Kind: "F1", W: 3, G: 0, R: "m", Start: 60 * ms1, End: 60 * ms1}},
		cycle(2, 0, "m", Exclusive, 50, 1000, 1010), cycle(1, 0, "mm", Exclusive, 0, 10, 100),
		cycle(4, 0, "fair", Exclusive, 0, 10, 100), cycle(5, 0, "m", Exclusive, 5000, 5001, 5002))
	got := Excerpt(h, Violation{Invariant: I9, T: 100 * ms1, R: "mm"}, 100)
	for _, want := range []string{"I9 on \"mm\" at +100 ms", "fault F1", "+0 ms w1/g0 inv mm", "+50 ms w2/g0 inv m", "+1010 ms w2/g0 rel m"} {
		if !strings.Contains(got, want) {
			t.Errorf("the excerpt lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "fair") || strings.Contains(got, "+5000 ms") {
		t.Errorf("the excerpt shows another lock, or what came long after:\n%s", got)
	}
	if i, j := strings.Index(got, "w1/g0 inv"), strings.Index(got, "w2/g0 inv"); i > j {
		t.Errorf("not in time order:\n%s", got)
	}
	got = Excerpt(h, Violation{Invariant: I9, T: 1000 * ms1, R: "mm"}, 2) // cut to the events nearest the violation
	if !strings.Contains(got, "  ...\n") || !strings.Contains(got, "+1000 ms w2/g0 acq m") || strings.Contains(got, "w1/g0") {
		t.Errorf("not cut to the events nearest the violation:\n%s", got)
	}
}

// faultsIn finds, through its index, exactly the faults a scan of them all
// finds, in the order they began.
func TestFaultsIn(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var faults []Fault
	for range 300 {
		start := rng.Int64N(100_000)
		faults = append(faults, Fault{Kind: "F" + strconv.Itoa(rng.IntN(9)+1), Start: start, End: start + rng.Int64N(3_000)})
	}
	m := build(history(faults))
	for range 2000 {
		from := rng.Int64N(105_000) - 2_000
		to := from + rng.Int64N(5_000)
		var want []Fault
		for _, f := range faults {
			if f.Start <= to && f.End >= from {
				want = append(want, f)
			}
		}
		slices.SortStableFunc(want, func(a, b Fault) int { return cmp64(a.Start, b.Start) })
		if got := slices.Collect(m.faultsIn(from, to)); !slices.Equal(got, want) {
			t.Fatalf("faultsIn(%d, %d) = %v, want %v", from, to, got, want)
		}
	}
}

// An Unleased lock (a CountingSemaphore) is checked under each epoch's name
// (csem:<n>) as itself: too many holders are I1; a waiter left unserved is
// no lost wake-up (a dead holder keeps its permits by design), and a holder
// under a deletion is not asked to be told (I5).
func TestUnleasedEpochs(t *testing.T) {
	three := slices.Concat(cycle(1, 0, "csem:7", Shared, 0, 10, 100), cycle(2, 0, "csem:7", Shared, 0, 20, 100),
		cycle(3, 0, "csem:7", Shared, 0, 30, 100))
	expect(t, history(nil, three), I1, 0, 1)
	expect(t, history(nil, three[:10]), I1, 0, 0)
	// A restart without persistence in the name's epoch, before the
	// overlap, lost the count (set again at the size while permits were
	// taken): expected, though no holder inside was hit. One after it is no
	// excuse.
	restart := []Fault{{Kind: "F3", Global: true, W: -1, G: -1, Start: 5 * ms1, End: 6 * ms1}}
	expect(t, history(restart, three), I1, 1, 0)
	late := []Fault{{Kind: "F3", Global: true, W: -1, G: -1, Start: 200 * ms1, End: 201 * ms1}}
	expect(t, history(late, three), I1, 0, 1)
	killed := cycle(1, 0, "csem:7", Shared, 0, 10, 100)[:3]
	kill := []Fault{{Kind: "F1", W: 1, G: 0, R: "csem", Start: 40 * ms1, End: 40 * ms1}}
	stuck := []Event{{T: 50 * ms1, W: 2, G: 0, K: Invoke, R: "csem:7", Mode: Shared}}
	two := slices.Concat(killed, cycle(3, 0, "csem:7", Shared, 0, 10, 59000), stuck)
	expect(t, history(kill, two), I3, 0, 0)
	del := []Fault{{Kind: "F9", Sub: "del", W: 1, G: 0, R: "csem", Start: 50 * ms1, End: 50 * ms1}}
	expect(t, history(del, cycle(1, 0, "csem:7", Shared, 0, 10, 1000)), I5, 0, 0)
	// The same histories on a name that is no epoch of an Unleased lock
	// are not checked as a semaphore: three holders inside are readers of
	// an unknown lock, which I1 allows.
	other := slices.Concat(cycle(1, 0, "m2:7", Shared, 0, 10, 100), cycle(2, 0, "m2:7", Shared, 0, 20, 100),
		cycle(3, 0, "m2:7", Shared, 0, 30, 100))
	expect(t, history(nil, other), I1, 0, 0)
}

// F21 (a quorum server restarted empty under a hold left on it and one
// other) loses the parked hold: a rival that entered after its holder was
// told is excused, one that entered before is a violation (the restarted
// server voted too soon); and the holder must be told within a lease (I5).
func TestRestartUnderMinority(t *testing.T) {
	f := []Fault{{Kind: "F21", W: 1, G: 0, R: "m", Start: 100 * ms1, End: 150 * ms1}}
	holder := cycle(1, 0, "m", Exclusive, 0, 50, 3000)
	told := func(at int64) []Event { // the holder's cycle, told of its loss at at
		return slices.Insert(slices.Clone(holder), 3, Event{T: at * ms1, W: 1, G: 0, K: Lost, R: "m"})
	}
	// Told at +900 ms, the rival in at +1200 ms: expected.
	expect(t, history(f, told(900), cycle(2, 0, "m", Exclusive, 200, 1200, 1300)), I1, 1, 0)
	// The rival in at +300 ms, before the holder was told: a violation.
	expect(t, history(f, told(900), cycle(2, 0, "m", Exclusive, 200, 300, 400)), I1, 0, 1)
	// Never told, and a rival got in: both I1 and I5.
	h := history(f, holder, cycle(2, 0, "m", Exclusive, 200, 1200, 1300))
	expect(t, h, I1, 0, 1)
	expect(t, h, I5, 0, 1)
	// Told later than a lease after the restart: I5.
	expect(t, history(f, told(1500), cycle(2, 0, "m", Exclusive, 200, 1600, 1700)), I5, 0, 1)
	expect(t, history(f, told(900)), I5, 0, 0)
	// The hold survived (taken before the cut): nothing to tell.
	expect(t, history(f, holder), I5, 0, 0)
	// Another fault's parked holder is not excused by F21.
	other := []Fault{{Kind: "F21", W: 3, G: 0, R: "m", Start: 100 * ms1, End: 150 * ms1}}
	expect(t, history(other, told(900), cycle(2, 0, "m", Exclusive, 200, 1200, 1300)), I1, 0, 1)
	// F20 (one server cut off from the holder's worker) loses a hold on a
	// bare majority the same way: the same rules.
	cut := []Fault{{Kind: "F20", W: 1, G: 0, R: "m", Start: 100 * ms1, End: 3100 * ms1}}
	expect(t, history(cut, told(900), cycle(2, 0, "m", Exclusive, 200, 1200, 1300)), I1, 1, 0)
	expect(t, history(cut, told(900), cycle(2, 0, "m", Exclusive, 200, 300, 400)), I1, 0, 1)
	expect(t, history(cut, holder), I5, 0, 0)
}

// A Semaphore whose holders take many permits each is counted in permits:
// two holders of 2^52-1 fit in 2^53-1, a third does not (I1); and it is
// free for a waiter while fewer than two hold it (I3).
func TestSemaphoreWeights(t *testing.T) {
	two := [][]Event{cycle(1, 0, "bigsem", Shared, 0, 10, 50), cycle(2, 0, "bigsem", Shared, 0, 20, 60)}
	expect(t, history(nil, two...), I1, 0, 0)
	expect(t, history(nil, append(two, cycle(3, 0, "bigsem", Shared, 0, 30, 40))...), I1, 0, 1)
	one := slices.Concat(cycle(1, 0, "bigsem", Shared, 0, 10, 5000), cycle(2, 0, "bigsem", Shared, 0, 10, 100))
	stuck := []Event{{T: 50 * ms1, W: 3, G: 0, K: Invoke, R: "bigsem", Mode: Shared}}
	expect(t, history(nil, one, stuck), I3, 0, 2) // free at 100 ms (one of two inside), and at 5 s
	expect(t, history(nil, one, cycle(3, 0, "bigsem", Shared, 50, 200, 300)), I3, 0, 0)
}

// A holder cut off from Redis while its process runs on (F5; F23, its
// connections reset while its service keeps the client busy) excuses an
// overlap once it was told of its loss, not before: its Client reckons the
// lease by its own clock and must tell it before the lease can run out on
// the server. It is told within the lease from the cut, plus the timer's
// slack (I5).
func TestToldBeforeRivalWhenCutOff(t *testing.T) {
	holder := cycle(1, 0, "m", Exclusive, 0, 50, 3000)
	told := func(at int64) []Event { // the holder's cycle, told of its loss at at
		return slices.Insert(slices.Clone(holder), 3, Event{T: at * ms1, W: 1, G: 0, K: Lost, R: "m"})
	}
	for _, kind := range []string{"F5", "F23"} {
		f := []Fault{{Kind: kind, W: 1, G: 0, R: "m", Start: 100 * ms1, End: 2100 * ms1}}
		// Told at +1080 ms, the rival in at +1120 ms: expected.
		expect(t, history(f, told(1080), cycle(2, 0, "m", Exclusive, 200, 1120, 1200)), I1, 1, 0)
		// The rival in before the holder was told: a violation, as is
		// one that was never told.
		expect(t, history(f, told(1150), cycle(2, 0, "m", Exclusive, 200, 1120, 1200)), I1, 0, 1)
		expect(t, history(f, holder, cycle(2, 0, "m", Exclusive, 200, 1120, 1200)), I1, 0, 1)
		// A hold of another worker is not excused.
		other := []Fault{{Kind: kind, W: 3, G: 0, R: "m", Start: 100 * ms1, End: 2100 * ms1}}
		expect(t, history(other, told(1080), cycle(2, 0, "m", Exclusive, 200, 1120, 1200)), I1, 0, 1)
		// A MultiMutex's hold is recorded, told too, under the goroutine
		// number of its second name, which is not the fault's.
		alias := told(1080)
		for i := range alias {
			alias[i].G = 100
		}
		expect(t, history(f, alias, cycle(2, 0, "m", Exclusive, 200, 1120, 1200)), I1, 1, 0)
		// I5: within the lease from the cut plus the timer's slack.
		h := history(f, told(1140), cycle(2, 0, "m", Exclusive, 200, 1160, 1200))
		h.Params.TimerSlack = 50 * time.Millisecond
		expect(t, h, I5, 0, 0)
		h = history(f, told(1160), cycle(2, 0, "m", Exclusive, 200, 1170, 1200))
		h.Params.TimerSlack = 50 * time.Millisecond
		expect(t, h, I5, 0, 1)
	}
}

// A worker that dies unasked (a panic) breaks I0; its hold ends at its
// death, as a killed worker's does.
func TestAlive(t *testing.T) {
	died := []Event{{T: 40 * ms1, W: 1, K: Died, Err: "exit status 2; its stderr: panic: ..."}}
	holder := cycle(1, 0, "m", Exclusive, 0, 10, 100)[:3]
	expect(t, history(nil, holder, died), I0, 0, 1)
	expect(t, history(nil, holder, died, cycle(2, 0, "m", Exclusive, 5, 45, 50)), I1, 0, 0)
	expect(t, history(nil, holder, died, cycle(2, 0, "m", Exclusive, 5, 30, 35)), I1, 0, 1)
	expect(t, history(nil, holder), I0, 0, 0)
}

// F24 holds back the replies of one connection of a worker for more than
// a lease while the server runs its requests. A hold of that worker
// returned before the replies came back may be lost by its Client's clock
// (its renewals' replies held up): it excuses an overlap once its holder
// was told, after the stall began. A grant read after the replies came
// back (returned after the fault's End) is no hold, and a rival beside it
// is a violation, told or not. A lost hold's holder is told within a lease
// of the later of the stall and its acquire, plus the timer's slack (I5).
func TestLateReplies(t *testing.T) {
	f := []Fault{{Kind: "F24", W: 1, G: 0, R: "m", Start: 100 * ms1, End: 1400 * ms1}}
	holder := cycle(1, 0, "m", Exclusive, 0, 50, 3000)
	told := func(hd []Event, at int64) []Event { // the holder's cycle, told of its loss at at
		return slices.Insert(slices.Clone(hd), 3, Event{T: at * ms1, W: 1, G: 0, K: Lost, R: "m"})
	}
	rival := func(in int64) []Event { return cycle(2, 0, "m", Exclusive, 200, in, in+100) }
	// Told at +1080 ms, the rival in at +1200 ms: expected.
	expect(t, history(f, told(holder, 1080), rival(1200)), I1, 1, 0)
	// The rival in before the holder was told: a violation.
	expect(t, history(f, told(holder, 1250), rival(1200)), I1, 0, 1)
	// Told before the stall began: not the fault's doing.
	expect(t, history(f, told(holder, 80), rival(1200)), I1, 0, 1)
	// A hold of another worker is not excused.
	other := []Fault{{Kind: "F24", W: 3, G: 0, R: "m", Start: 100 * ms1, End: 1400 * ms1}}
	expect(t, history(other, told(holder, 1080), rival(1200)), I1, 0, 1)
	// A grant read after the stall (called before it, returned at +1402
	// ms), told at once: the rival beside it is a violation.
	late := cycle(1, 0, "m", Exclusive, 90, 1402, 3000)
	expect(t, history(f, told(late, 1403), rival(1500)), I1, 0, 1)

	// I5: within a lease of the stall's start (the hold was taken before
	// it), plus the timer's slack; never told while a rival got in.
	check := func(h *History, want int) {
		t.Helper()
		h.Params.TimerSlack = 50 * time.Millisecond
		expect(t, h, I5, 0, want)
	}
	check(history(f, told(holder, 1140), rival(1200)), 0)
	check(history(f, told(holder, 1160), rival(1200)), 1)
	check(history(f, holder, rival(1200)), 1)
	// The hold kept (nobody got in, not told): nothing to tell.
	check(history(f, holder), 0)
	// Taken during the stall: within a lease of its acquire.
	during := cycle(1, 0, "m", Exclusive, 300, 350, 3000)
	check(history(f, told(during, 1390), rival(1450)), 0)
	check(history(f, told(during, 1410), rival(1450)), 1)
	// A grant read after the stall is I1's matter, not I5's.
	check(history(f, told(late, 2500)), 0)
}

// TestDeadlines checks I10: a call returns by its deadline plus CallSlack
// (an acquire from its Invoke, a release or an Add from T0), unless its own
// process was stopped meanwhile (F2); a call that carries no deadline, or a
// history from before I10, is not checked.
func TestDeadlines(t *testing.T) {
	timed := func(w int, inv, ret, d int64, k Kind) []Event {
		return []Event{
			{T: inv * ms1, W: w, G: 0, K: Invoke, R: "m", Mode: Exclusive, D: d * ms1},
			{T: ret * ms1, W: w, G: 0, K: k, R: "m", Mode: Exclusive},
		}
	}
	release := func(w int, t0, ret, d int64) []Event {
		return []Event{{T: ret * ms1, T0: t0 * ms1, W: w, G: 0, K: Released, R: "m", Mode: Exclusive, D: d * ms1}}
	}
	expect(t, history(nil, timed(1, 0, 300, 300, AcquireFailed)), I10, 0, 0)
	expect(t, history(nil, timed(1, 0, 399, 300, AcquireFailed)), I10, 0, 0) // within the slack
	expect(t, history(nil, timed(1, 0, 450, 300, AcquireFailed)), I10, 0, 1)
	expect(t, history(nil, timed(1, 0, 2300, 300, Acquired)), I10, 0, 1)
	expect(t, history(nil, timed(1, 0, 2300, 0, AcquireFailed)), I10, 0, 0) // no deadline recorded
	expect(t, history(nil, release(1, 1000, 1050, 50)), I10, 0, 0)
	expect(t, history(nil, release(1, 1000, 3000, 50)), I10, 0, 1)
	expect(t, history(nil, release(1, 1000, 1950, 1000)), I10, 0, 0) // a plain Unlock's bound
	// Its own process stopped: expected; another's: no excuse.
	stop := func(w int) []Fault {
		return []Fault{{Kind: "F2", W: w, G: 0, R: "m", Start: 100 * ms1, End: 2100 * ms1}}
	}
	expect(t, history(stop(1), timed(1, 0, 2300, 300, AcquireFailed)), I10, 1, 0)
	expect(t, history(stop(2), timed(1, 0, 2300, 300, AcquireFailed)), I10, 0, 1)
	expect(t, history(stop(1), release(1, 2200, 2500, 50)), I10, 0, 1) // after the stop
	// A history from before I10 has no CallSlack: nothing is checked.
	h := history(nil, timed(1, 0, 2300, 300, AcquireFailed))
	h.Params.CallSlack = 0
	expect(t, h, I10, 0, 0)
}
