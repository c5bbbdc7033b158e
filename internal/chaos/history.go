package chaos

import (
	"iter"
	"math"
	"regexp"
	"slices"
	"sort"
	"time"
)

// never stands for a return that did not happen.
const never = math.MaxInt64

// A History is what a run recorded: the workers' events, the faults, the
// resources and the bounds, and the time the run ended.
type History struct {
	// The run: its schedule's seed, how long faults were injected, the
	// server and its topology, and the broken variant switched on, if any.
	Seed     int64  `json:"seed"`
	Duration string `json:"duration"`
	Redis    string `json:"redis"`
	Topology string `json:"topology,omitempty"`
	Mutant   string `json:"mutant,omitempty"`

	Events    []Event
	Faults    []Fault
	Resources map[string]Resource
	Params    Params
	End       int64
}

// A wait is one waiting acquire call.
type wait struct {
	W, G   int
	R      string
	Mode   string
	Inv    int64
	Queued int64 // its latest place's confirmation; 0 when it never queued
	// Requeued counts the times it lost its place (see EventQueued)
	// and queued again at the end.
	Requeued int
	Ret      int64 // never when it did not return
	OK       bool
	hold     *hold
	// Part marks a MultiMutex call that took some of its names before it
	// returned: killed then, its worker holds them until their lease runs
	// out.
	Part bool
	// Finished marks a call that returned nil without a hold (a Once found
	// done, a WaitGroup's Wait at zero).
	Finished bool
}

// A hold is one acquisition, from the acquire's return to the release's.
type hold struct {
	W, G  int
	R     string
	Mode  string
	Tok   uint64
	Inv   int64 // the acquire's call: the hold began in Redis between Inv and Acq
	Acq   int64
	Enter int64
	Exit  int64 // the end of the critical section; the death of a killed worker
	Rel   int64 // the release's return; never if it did not return
	Lost  int64 // when the holder saw the loss; 0 if it did not
	// RelErr is the release's error, "" when it succeeded.
	RelErr string
	// Killed is set when the worker died holding; Rel is never then.
	Killed int64
	// Completed is when a Once's function returned nil in this hold, 0 if
	// it did not.
	Completed int64
	// Handed marks a hold that a release handed through Redis: until its
	// first renewal its lease was the waiter's heartbeat deadline.
	Handed bool
}

// A call is a call of a Once's Reset or a WaitGroup's Add (N its delta).
type call struct {
	W, G  int
	R     string
	N     int64
	T0, T int64
	Err   string
}

// A write is one call of a Fence's Set.
type write struct {
	W, G     int
	R        string
	Tok      uint64
	T0, T    int64
	Accepted bool
}

// model is a History sorted into calls.
type model struct {
	*History
	waits  []*wait
	holds  []*hold
	writes []write
	resets []call        // a Once's Resets
	adds   []call        // a WaitGroup's Adds (Done is Add -1)
	kills  map[int]int64 // worker -> when it was killed
	t0     int64         // the run's first event (see History.start)
	// byStart is Faults by start, longest the longest one's length (see
	// faultsIn).
	byStart []Fault
	longest int64
	slots   map[[2]int][]*hold // (worker, goroutine) -> its holds in order
	// unreplicated are the attempts that took a lock in Redis and gave it
	// back when its replicas did not acknowledge them in time (a call that
	// returned ErrNotReplicated), as holds from the attempt's start at the
	// latest to the call's return: the lock was taken meanwhile, by nobody
	// the history shows.
	unreplicated []*hold
}

// start returns when the run's first event happened, which reports count
// from (the events are in each worker's order, not in one).
func (h *History) start() int64 {
	if len(h.Events) == 0 {
		return 0
	}
	t0 := h.Events[0].T
	for _, e := range h.Events {
		t0 = min(t0, e.T)
	}
	return t0
}

// build pairs each worker goroutine's events into waits, holds and writes.
// A worker's events are in its own order; a killed worker's open calls end at
// its death, those of a worker that never stopped at never.
func build(h *History) *model {
	m := &model{History: h, kills: map[int]int64{}, slots: map[[2]int][]*hold{}, t0: h.start()}
	m.indexFaults()
	for _, f := range h.Faults {
		if f.kills() {
			m.kills[f.W] = f.End // dead by then at the latest
		}
	}
	type slot struct{ W, G int }
	waiting := map[slot]*wait{}
	holding := map[slot]*hold{}
	handed := map[slot]bool{}
	handedInRedis := map[slot]bool{}
	resetting := map[slot]int{} // a Reset called and not yet returned: its index in m.resets
	// A local handover passes a hold on without Redis: the hold that receives
	// it began, in Redis, when the first hold of the chain was called for.
	type owner struct {
		W int
		R string
	}
	chain := map[owner]int64{}
	for _, e := range h.Events {
		s := slot{e.W, e.G}
		switch e.K {
		case Invoke:
			w := &wait{W: e.W, G: e.G, R: e.R, Mode: e.Mode, Inv: e.T, Ret: never}
			waiting[s] = w
			m.waits = append(m.waits, w)
		case Queued:
			switch w := waiting[s]; {
			case w == nil:
			case e.Err != "": // queued again at the end: its place is this one
				w.Queued = e.T
				w.Requeued++
			case w.Queued == 0:
				w.Queued = e.T
			}
		case Handover:
			handed[s] = true
		case Handed:
			handedInRedis[s] = true
		case Part:
			if w := waiting[s]; w != nil {
				w.Part = true
			}
		case Finished:
			if w := waiting[s]; w != nil {
				delete(waiting, s)
				w.Ret, w.Finished = e.T, true
			}
		case Completed:
			if hd := holding[s]; hd != nil {
				hd.Completed = e.T
			}
		case ResetCall: // until it returns, it may run at any time (its worker may die)
			resetting[s] = len(m.resets)
			m.resets = append(m.resets, call{W: e.W, G: e.G, R: e.R, T0: e.T, T: never})
		case Reset:
			if i, ok := resetting[s]; ok {
				m.resets[i].T, m.resets[i].Err = e.T, e.Err
				delete(resetting, s)
			}
		case Add:
			m.adds = append(m.adds, call{W: e.W, G: e.G, R: e.R, N: e.N, T0: e.T0, T: e.T, Err: e.Err})
		case Acquired, AcquireFailed:
			w := waiting[s]
			handover, inRedis := handed[s], handedInRedis[s]
			delete(handed, s)
			delete(handedInRedis, s)
			if w == nil {
				continue // a single attempt: no waiter
			}
			delete(waiting, s)
			w.Ret, w.OK = e.T, e.K == Acquired
			if d, ok := unreplicatedFor(e.Err); ok {
				m.unreplicated = append(m.unreplicated, &hold{W: e.W, G: e.G, R: e.R, Mode: e.Mode, Inv: w.Inv,
					Acq: max(w.Inv, e.T-int64(d)), Rel: e.T})
			}
			if w.OK {
				hd := &hold{W: e.W, G: e.G, R: e.R, Mode: e.Mode, Tok: e.Tok, Inv: w.Inv, Acq: e.T, Rel: never, Handed: inRedis}
				if handover {
					hd.Inv = chain[owner{e.W, e.R}]
				}
				chain[owner{e.W, e.R}] = hd.Inv
				w.hold = hd
				holding[s] = hd
				m.holds = append(m.holds, hd)
				m.slots[[2]int{e.W, e.G}] = append(m.slots[[2]int{e.W, e.G}], hd)
			}
		case Enter:
			if hd := holding[s]; hd != nil {
				hd.Enter = e.T
			}
		case Exit:
			if hd := holding[s]; hd != nil {
				hd.Exit = e.T
			}
		case Lost:
			if hd := holding[s]; hd != nil && hd.Lost == 0 {
				hd.Lost = e.T
			}
		case Released:
			if hd := holding[s]; hd != nil {
				hd.Rel, hd.RelErr = e.T, e.Err
				delete(holding, s)
			}
		case Write, Stale:
			m.writes = append(m.writes, write{W: e.W, G: e.G, R: e.R, Tok: e.Tok, T0: e.T0, T: e.T, Accepted: e.K == Write})
		case Died: // unasked (I0): its calls end there, as a killed worker's
			if _, ok := m.kills[e.W]; !ok {
				m.kills[e.W] = e.T
			}
		}
	}
	for _, w := range waiting {
		if t, ok := m.kills[w.W]; ok {
			w.Ret = t
		}
	}
	for _, hd := range holding {
		if t, ok := m.kills[hd.W]; ok {
			hd.Killed = t
			if hd.Enter != 0 && hd.Exit == 0 {
				hd.Exit = t
			}
		} else if hd.Enter != 0 && hd.Exit == 0 {
			hd.Exit = never
		}
	}
	return m
}

// occupied returns when hd stopped occupying the lock in Redis, at the
// latest: its release, or for a killed holder its death plus a lease.
func (m *model) occupied(hd *hold) int64 {
	if hd.Killed != 0 {
		return hd.Killed + int64(m.Params.Lease)
	}
	return hd.Rel
}

// faultsIn yields the faults active at some time in [from, to], in the
// order they began. It looks only at those that began within the longest
// fault's length before from, and allocates nothing: a look per hold or per
// freeing stays cheap in a run of millions of holds and thousands of
// faults.
func (m *model) faultsIn(from, to int64) iter.Seq[Fault] {
	return func(yield func(Fault) bool) {
		lo := sort.Search(len(m.byStart), func(i int) bool { return m.byStart[i].Start >= from-m.longest })
		for _, f := range m.byStart[lo:] {
			if f.Start > to {
				return
			}
			if f.End >= from && !yield(f) {
				return
			}
		}
	}
}

// anyFaultIn reports whether a fault was active at some time in [from, to].
func (m *model) anyFaultIn(from, to int64) bool {
	for range m.faultsIn(from, to) {
		return true
	}
	return false
}

// indexFaults sorts a copy of the faults by their start for faultsIn.
func (m *model) indexFaults() {
	m.byStart = slices.Clone(m.Faults)
	slices.SortStableFunc(m.byStart, func(a, b Fault) int { return cmp64(a.Start, b.Start) })
	for _, f := range m.byStart {
		m.longest = max(m.longest, f.End-f.Start)
	}
}

// byResource groups items by resource name, keeping their order.
func byResource[T any](items []T, name func(T) string) map[string][]T {
	out := map[string][]T{}
	for _, it := range items {
		out[name(it)] = append(out[name(it)], it)
	}
	return out
}

// percentile returns the p-th percentile (0..100) of xs, sorting xs.
func percentile(xs []int64, p float64) int64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	i := int(math.Ceil(p/100*float64(len(xs)))) - 1
	return xs[max(i, 0)]
}

// notReplicated matches the error of a call whose acquisition its replicas
// did not acknowledge within the time it names (ErrNotReplicated's text).
var notReplicated = regexp.MustCompile(`not acknowledged by enough replicas: \d+ of \d+ acknowledged within (\S+)$`)

// unreplicatedFor reports whether err is the error of a call whose last
// attempt took the lock and gave it back unacknowledged, and how long that
// attempt may have held it: the acknowledgement's timeout, plus a round
// trip for the acquire and one for the undo.
func unreplicatedFor(err string) (time.Duration, bool) {
	m := notReplicated.FindStringSubmatch(err)
	if m == nil {
		return 0, false
	}
	d, perr := time.ParseDuration(m[1])
	if perr != nil {
		return 0, false
	}
	return d + 200*time.Millisecond, true
}
