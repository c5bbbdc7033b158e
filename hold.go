package redisync

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redisync/redisync/internal/ctxlock"
)

// holdKey names one owner's hold of one sort on one lock of a Client.
type holdKey struct {
	kind  holdKind
	name  string
	owner uint64
}

// holdKind is the sort of a hold.
type holdKind uint8

const (
	exclusive holdKind = iota // Mutex, FencedMutex, a write lock
	shared                    // a read lock
	fair                      // FairMutex (its holdKey.name is the lock key)
	semaphore                 // Semaphore (name: its holders key; owner: the handle)
	multiple                  // MultiMutex (name: its names in one slot, "\x00"-separated)
)

// A hold is the local record of one owner's hold on one lock, kept in the
// Client's hold table while calls for it are in progress or while it is held.
//
// Each hold, from the first acquire to the final release (a term), has its
// own identity in Redis (term.field), on which alone the scripts act: a late
// command of an earlier hold (its caller gave up, or its connection stalled
// while another overtook it) finds nothing of this one to change. The count
// is set by compare-and-set, so a repeated or late call cannot inflate it.
type hold struct {
	key  holdKey
	refs int // guarded by the table's mu: calls in progress, plus one while held

	// op serializes this owner's calls on this lock and guards the fields
	// below. A call waits for it only as long as its context lasts.
	op    ctxlock.Mutex
	count int
	held  atomic.Int64 // count, for readers that do not wait for op (Semaphore.Held)
	// lost counts a Semaphore's permits of ended holds that Release may
	// still give back; the record stays in the table while there are any.
	lost int
	// freeing are the owner's waiting calls to wake when count returns to
	// 0 (see wakeWhenFree).
	freeing []freeWaiter
	// The handover within the Client (handover.go): streak counts the
	// handovers since the hold came from Redis at fromRedis (the acquire's
	// reply).
	streak    int
	fromRedis time.Time

	// term is the current term while held, nil otherwise. It is written under
	// op and read without it by Close and ForceUnlock, which end terms.
	term atomic.Pointer[term]
}

// A holdTable is a Client's record of its holds: one per owner and lock,
// kept while calls for it are in progress or while it is held, and the
// fields that a ForceUnlock deleted before their hold was recorded. Its
// mutex guards the map, every record's refs and the forced fields; a
// record's other fields are its op's.
type holdTable struct {
	mu    sync.Mutex
	holds map[holdKey]*hold
	// forced holds, with when, the fields of this Client's holds that a
	// ForceUnlock through it deleted while no term had them: holds whose
	// acquire reply (or handover message) was on its way. record ends such
	// a hold as force-unlocked the moment it is recorded.
	forced map[string]time.Time
}

// newHoldTable returns an empty table.
func newHoldTable() holdTable {
	return holdTable{holds: make(map[holdKey]*hold), forced: make(map[string]time.Time)}
}

// ref returns the record of key, creating it with orCreate, and counts the
// caller in. It returns nil when there is no record and m is existing.
func (tb *holdTable) ref(key holdKey, m refMode) *hold {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	h := tb.holds[key]
	if h == nil {
		if m == existing {
			return nil
		}
		h = &hold{key: key}
		tb.holds[key] = h
	}
	h.refs++
	return h
}

// unref counts a caller (or the end of a hold) out of h and drops the record
// when nobody needs it any more.
func (tb *holdTable) unref(h *hold) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	h.refs--
	if h.refs == 0 {
		delete(tb.holds, h.key)
	}
}

// current returns the count and the identity in Redis of key's current hold
// without waiting for calls in flight: 0 and "" when there is none.
func (tb *holdTable) current(key holdKey) (count int64, field string) {
	h := tb.ref(key, existing)
	if h == nil {
		return 0, ""
	}
	defer tb.unref(h)
	if t := h.term.Load(); t != nil {
		field = t.field
	}
	return h.held.Load(), field
}

// record makes the term h now has (h.op held) keep h's record, and
// reports whether a ForceUnlock deleted the term's field before: the term
// must then end as force-unlocked.
func (tb *holdTable) record(h *hold) (forced bool) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	h.refs++ // the hold itself keeps the record
	if t := h.term.Load(); t != nil {
		_, forced = tb.forced[t.field]
		delete(tb.forced, t.field)
	}
	return forced
}

// keep makes the term h now has keep h's record (a hold handed over; see
// adopt).
func (tb *holdTable) keep(h *hold) {
	tb.mu.Lock()
	h.refs++
	tb.mu.Unlock()
}

// finish clears h after its final release or after its loss has been
// acknowledged by the owner (h.op held).
func (tb *holdTable) finish(h *hold) {
	h.clear()
	if h.lost == 0 {
		tb.unref(h)
	}
}

// setAside ends the use of a Semaphore's lost hold (h.op held) for a new
// acquire: its permits become lost ones, which Release may still give back,
// and the record stays in the table while any are left.
func (tb *holdTable) setAside(h *hold) {
	if h.lost == 0 {
		h.lost = h.count // the hold's reference now keeps the lost permits
	} else {
		h.lost += h.count
		tb.unref(h)
	}
	h.clear()
}

// forcedTTL is how long a field that a ForceUnlock deleted is remembered
// for a hold being recorded (see holdTable.forced): far longer than a reply
// takes to be recorded, short enough to keep the record small.
const forcedTTL = time.Minute

// terms calls each with the live term of every record (tb.mu held): each
// loads the term once, as record stores it before it takes tb.mu, so that
// a term is either seen here or looked for among the forced fields there.
func (tb *holdTable) terms(each func(holdKey, *term)) {
	for key, h := range tb.holds {
		if t := h.term.Load(); t != nil {
			each(key, t)
		}
	}
}

// forget remembers, among fields that a force unlock deleted, this
// Client's (own is its prefix) that no live term has (tb.mu held), and
// drops the fields remembered for longer than forcedTTL.
func (tb *holdTable) forget(fields []string, own string, live map[string]bool) {
	now := time.Now()
	for field, at := range tb.forced {
		if now.Sub(at) > forcedTTL {
			delete(tb.forced, field)
		}
	}
	for _, field := range fields {
		if strings.HasPrefix(field, own) && !live[field] {
			tb.forced[field] = now
		}
	}
}

// setCount sets h's count (h.op held).
func (h *hold) setCount(n int) {
	h.count = n
	h.held.Store(int64(n))
}

// termOf returns the term of h's current hold, nil when there is none (or no
// record).
func termOf(h *hold) *term {
	if h == nil {
		return nil
	}
	return h.term.Load()
}

// clear forgets h's hold (h.op held); its record stays referenced by the
// caller.
func (h *hold) clear() {
	h.setCount(0)
	h.streak = 0
	h.term.Store(nil)
	for _, w := range h.freeing {
		w.Wake()
	}
	h.freeing = nil
}

// A freeWaiter is a waiting call of a hold's owner, which the end of that
// hold wakes.
type freeWaiter interface {
	Wake()
	waiting() bool // false once the call has returned
}

// wakeWhenFree has w, a waiting call of the owner, woken when the owner's
// current hold ends (h.op held, h.count > 0), once however often it asks.
// The calls that returned meanwhile are forgotten: however many calls of
// the owner come and go during a long hold, the list stays as long as the
// calls still waiting.
func (h *hold) wakeWhenFree(w freeWaiter) {
	h.freeing = slices.DeleteFunc(h.freeing, func(o freeWaiter) bool { return !o.waiting() })
	if !slices.Contains(h.freeing, w) {
		h.freeing = append(h.freeing, w)
	}
}

// A handover is a term on its way to the caller it was handed over to, with
// the bounds of the run of handovers it belongs to. The zero handover, with
// no term, is a wake-up: what a waiting call's local channel (buffered, one
// deep) otherwise carries.
type handover struct {
	t         *term
	streak    int
	fromRedis time.Time
}

// wake wakes the waiting call whose local channel is local, unless a
// wake-up or a hold is pending there already: a zero handover.
func wake(local chan handover) {
	select {
	case local <- handover{}:
	default:
	}
}

// A localWaker is a waiting call's local channel as a lease.Waker (a
// ticket's OnLapse).
type localWaker chan handover

// Wake wakes the call (see wake).
func (l localWaker) Wake() { wake(l) }

// hand sends the hold x on local, the channel of a call that waits for it:
// a wake-up pending there is superseded by x. Holds are handed under the
// Client's queues' mutex, one at most to a call; wake-ups come from
// anywhere, so the send retries past one that came in between, and never
// blocks.
func hand(local chan handover, x handover) {
	for {
		select {
		case local <- x:
			return
		default:
		}
		select {
		case <-local:
		default:
		}
	}
}

// A refMode says whether holdTable.ref makes a record that is not there.
type refMode uint8

const (
	existing refMode = iota
	orCreate
)
