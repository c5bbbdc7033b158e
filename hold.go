package redisync

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redisync/redisync/internal/ctxlock"
	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/mutant"
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
// Client's table while calls for it are in progress or while it is held.
//
// Each hold, from the first acquire to the final release (a term), has its
// own identity in Redis (term.field), on which alone the scripts act: a late
// command of an earlier hold (its caller gave up, or its connection stalled
// while another overtook it) finds nothing of this one to change. The count
// is set by compare-and-set, so a repeated or late call cannot inflate it.
type hold struct {
	key  holdKey
	refs int // guarded by Client.mu: calls in progress, plus one while held

	// op serializes this owner's calls on this lock and guards the fields
	// below. A call waits for it only as long as its context lasts.
	op    ctxlock.Mutex
	count int
	held  atomic.Int64 // count, for readers that do not wait for op (Semaphore.Held)
	// lost counts a Semaphore's permits of ended holds that Release may
	// still give back; the record stays in the table while there are any.
	lost int
	free chan struct{} // closed when count returns to 0; see freeChan
	// The handover within the Client (handover.go): streak counts the
	// handovers since the hold came from Redis at fromRedis (the acquire's
	// reply).
	streak    int
	fromRedis time.Time

	// term is the current term while held, nil otherwise. It is written under
	// op and read without it by Close and ForceUnlock, which end terms.
	term atomic.Pointer[term]
}

// A term is one continuous hold, from the first acquire to the final release
// or the loss: what a handle's Done and Err report.
type term struct {
	field string // the hold's identity in Redis
	// ambiguous records that an acquire attempt of the term had an unknown
	// outcome: a copy of it may still arrive after the term ends, so the
	// final release latches the field for longer (see tombstoneTTL).
	ambiguous bool
	// synced is the WithSyncReplicas count its acquisition satisfied (0
	// for none): a hold is handed only to a handle that asks for no more.
	synced int
	args   [3]string // the lease's Args, stored here to spare an allocation
	lease  *lease.Lease
	own    lease.Lease   // what lease points to: one allocation for both
	token  atomic.Uint64 // a FencedMutex's latest token in this term; an Election's proclamations
	obs    *termObserver // reports the end; nil without an observer

	// cfg and name serve the loss report (LeaseLost).
	cfg  *config
	name string

	mu    sync.Mutex
	ended bool
	err   error
	onEnd func()        // see whenEnded
	done  chan struct{} // made on the first call of Done: most holds end without one
}

// LeaseLost is the term's loss report from the renewal goroutine. It must not
// block, so it leaves the hold record to the owner's release.
func (t *term) LeaseLost(cause error) {
	if errors.Is(cause, lease.ErrNotHeld) {
		cause = ErrHoldGone
	} else {
		cause = ErrLeaseExpired
	}
	t.lost(cause)
}

// lost ends t with ErrLockLost for cause and logs the loss.
func (t *term) lost(cause error) {
	if t.end(lostError(t.name, cause)) {
		t.cfg.logger.Warn("redisync: lock lost", "name", t.name, "cause", cause.Error())
	}
}

// end closes the term with err (nil for a clean release). Only the first call
// counts; it reports whether it was the first.
func (t *term) end(err error) bool {
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		return false
	}
	t.ended, t.err = true, err
	if t.done != nil {
		close(t.done)
	}
	var since time.Time
	if t.obs != nil {
		since = t.obs.since
	}
	onEnd := t.onEnd
	t.mu.Unlock()
	if onEnd != nil {
		onEnd()
	}
	if t.obs != nil {
		t.observeEnd(err, since) // outside t.mu: the observer may read Err
	}
	return true
}

// whenEnded arranges for f to run once t ends, or at once if it has ended:
// a Once cancels its function's context with it when its claim is lost.
func (t *term) whenEnded(f func()) {
	t.mu.Lock()
	ended := t.ended
	if !ended {
		t.onEnd = f
	}
	t.mu.Unlock()
	if ended {
		f()
	}
}

// doneChan is a handle's Done for its latest term t: t's done channel, or a
// closed channel when there has been no term (t is nil) or it has ended.
func (t *term) doneChan() <-chan struct{} {
	if t == nil {
		return closedChan
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done == nil {
		if t.ended {
			return closedChan
		}
		t.done = make(chan struct{})
	}
	return t.done
}

// errOrNil is a handle's Err for its latest term t (nil when t is nil).
func (t *term) errOrNil() error {
	if t == nil {
		return nil
	}
	_, err := t.result()
	return err
}

// result reports whether the term has ended, and how.
func (t *term) result() (ended bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ended, t.err
}

// ref returns the record of key, creating it when create is set, and counts
// the caller in. It returns nil when there is no record and create is unset.
func (c *Client) ref(key holdKey, create bool) *hold {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.holds[key]
	if h == nil {
		if !create {
			return nil
		}
		h = &hold{key: key}
		c.holds[key] = h
	}
	h.refs++
	return h
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

// current returns the count and the identity in Redis of key's current hold
// without waiting for calls in flight: 0 and "" when there is none.
func (c *Client) current(key holdKey) (count int64, field string) {
	h := c.ref(key, false)
	if h == nil {
		return 0, ""
	}
	defer c.unref(h)
	if t := h.term.Load(); t != nil {
		field = t.field
	}
	return h.held.Load(), field
}

// unref counts a caller (or the end of a hold) out of h and drops the record
// when nobody needs it any more.
func (c *Client) unref(h *hold) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h.refs--
	if h.refs == 0 {
		delete(c.holds, h.key)
	}
}

// begin records a first acquire of h (h.op held) as term t, whose expiry was
// set by the request sent at sent, and starts watching its lease.
func (c *Client) begin(h *hold, t *term, sent time.Time, within time.Duration) {
	h.fromRedis = time.Now()
	if t.obs != nil {
		t.obs.since = sent
	}
	h.term.Store(t)
	c.mu.Lock()
	h.refs++ // the hold itself keeps the record
	_, forced := c.forced[t.field]
	delete(c.forced, t.field)
	c.mu.Unlock()
	if within > 0 {
		c.leases.AddWithin(t.lease, sent, within)
	} else {
		c.leases.Add(t.lease, sent)
	}
	if forced {
		c.lose(t, ErrForceUnlocked) // deleted by a ForceUnlock before it was recorded
	}
}

// finish clears h after its final release or after its loss has been
// acknowledged by the owner (h.op held).
func (c *Client) finish(h *hold) {
	c.clear(h)
	if h.lost == 0 {
		c.unref(h)
	}
}

// clear forgets h's hold (h.op held); its record stays referenced by the
// caller.
func (c *Client) clear(h *hold) {
	h.setCount(0)
	h.streak = 0
	h.term.Store(nil)
	if h.free != nil {
		close(h.free)
		h.free = nil
	}
}

// setAside ends the use of a Semaphore's lost hold (h.op held) for a new
// acquire: its permits become lost ones, which Release may still give back,
// and the record stays in the table while any are left.
func (c *Client) setAside(h *hold) {
	if h.lost == 0 {
		h.lost = h.count // the hold's reference now keeps the lost permits
	} else {
		h.lost += h.count
		c.unref(h)
	}
	c.clear(h)
}

// lose ends term t as lost for cause and stops its renewal.
func (c *Client) lose(t *term, cause error) {
	c.leases.Remove(t.lease)
	t.lost(cause)
}

// freeChan returns a channel closed when the owner's current hold ends (h.op
// held, h.count > 0), made when first needed: most holds end without one.
func (h *hold) freeChan() chan struct{} {
	if h.free == nil {
		h.free = make(chan struct{})
	}
	return h.free
}

// forcedTTL is how long a field that a ForceUnlock deleted is remembered
// for a hold being recorded (see Client.forced): far longer than a reply
// takes to be recorded, short enough to keep the record small.
const forcedTTL = time.Minute

// endForced ends, as force-unlocked, this Client's holds among fields, the
// hold fields that a force unlock of the lock key name deleted, and
// remembers those no term has yet: a hold being recorded ends as soon as it
// is (see begin).
func (c *Client) endForced(name string, fields []string) {
	own := c.id + ":"
	c.endHolds(func(key holdKey, t *term) bool { return key.name == name && slices.Contains(fields, t.field) },
		func(t *term) { t.lost(ErrForceUnlocked) },
		func(live map[string]bool) {
			now := time.Now()
			for field, at := range c.forced {
				if now.Sub(at) > forcedTTL {
					delete(c.forced, field)
				}
			}
			for _, field := range fields {
				if strings.HasPrefix(field, own) && !live[field] {
					c.forced[field] = now
				}
			}
		})
}

// endHolds stops the renewal of every live term of this Client's holds
// (those being handed over between handles included) that match accepts, and
// ends it with end.
// If seen is set, it is called (c.mu held) with the fields of every live
// term of this Client's, those being handed over included.
func (c *Client) endHolds(match func(holdKey, *term) bool, end func(*term), seen func(live map[string]bool)) {
	var terms []*term
	var live map[string]bool
	if seen != nil {
		live = make(map[string]bool)
	}
	c.xmu.Lock() // a hold being handed over is in c.handing or in its new record
	c.mu.Lock()
	for key, h := range c.holds {
		// One load for both: begin stores a term before it takes c.mu, and
		// a term must be either ended here or looked for in c.forced there.
		if t := h.term.Load(); t != nil {
			if live != nil {
				live[t.field] = true
			}
			if match(key, t) {
				terms = append(terms, t)
			}
		}
	}
	for t, key := range c.handing {
		if live != nil {
			live[t.field] = true
		}
		if match(key, t) {
			terms = append(terms, t)
		}
	}
	if seen != nil {
		seen(live)
	}
	c.mu.Unlock()
	c.xmu.Unlock()
	for _, t := range terms {
		c.leases.Remove(t.lease)
		end(t)
	}
}

// lastHold numbers the holds of the process: a hold's identity in Redis is
// "<client-uuid>:<n>", as Redisson's field is "<uuid>:<thread-id>".
var lastHold atomic.Uint64

// newField returns the identity of a new hold of owner, ending in suffix: a
// field no other hold has had. (The owner-field mutant gives every hold of
// an owner the same one, "<client-uuid>:<owner>".)
func (c *Client) newField(owner uint64, suffix string) string {
	if mutant.On("owner-field") {
		return c.id + ":" + strconv.FormatUint(owner, 10) + suffix
	}
	var buf [64]byte
	b := append(buf[:0], c.id...)
	b = append(b, ':')
	b = strconv.AppendUint(b, lastHold.Add(1), 10)
	return string(append(b, suffix...))
}
