package redisync

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redisync/redisync/internal/lease"
)

// A term is one continuous hold, from the first acquire to the final release
// or the loss: what a handle's Done and Err report.
type term struct {
	field    string // the hold's identity in Redis
	latchKey string // its latch key, if the field was made with it (see newField)
	// ambiguous records that an acquire attempt of the term had an unknown
	// outcome: a copy of it may still arrive after the term ends, so the
	// final release latches the field for longer (see tombstoneTTL).
	ambiguous bool
	// synced is the WithSyncReplicas count its acquisition satisfied (0
	// for none): a hold is handed only to a handle that asks for no more.
	synced int
	// queued records that the hold came through a Mutex's queue in Redis
	// (see scripts.Release.Run).
	queued bool
	args   [3]string // the lease's Args, stored here to spare an allocation
	lease  *lease.Lease
	own    lease.Lease   // what lease points to: one allocation for both
	token  atomic.Uint64 // a FencedMutex's latest token in this term; an Election's proclamations
	obs    *termObserver // reports the end; nil without an observer

	// cfg, primitive and name serve the loss report (LeaseLost).
	cfg       *config
	primitive Primitive
	name      string

	mu    sync.Mutex
	ended bool
	err   error
	onEnd []func()      // see whenEnded
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
	if t.end(lostError(t.primitive, t.name, cause)) {
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
	for _, f := range onEnd {
		f()
	}
	if t.obs != nil {
		t.observeEnd(err, since) // outside t.mu: the observer may read Err
	}
	return true
}

// whenEnded arranges for f to run once t ends, or at once if it has ended:
// a Once cancels its function's context with it when its claim is lost, a
// holder's context (see context) is cancelled.
func (t *term) whenEnded(f func()) {
	t.mu.Lock()
	ended := t.ended
	if !ended {
		t.onEnd = append(t.onEnd, f)
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

// context is a handle's Context for its latest term t: a copy of parent
// cancelled when t ends, with t's end as the cause (ErrNotHeld after a clean
// release), and at once, with ErrNotHeld, when t is nil or has ended
// cleanly. The term's end cancels it: no goroutine waits for it.
func (t *term) context(parent context.Context) context.Context {
	ctx, cancel := context.WithCancelCause(parent)
	if t == nil {
		cancel(ErrNotHeld)
		return ctx
	}
	t.whenEnded(func() {
		_, err := t.result()
		if err == nil {
			err = ErrNotHeld
		}
		cancel(err)
	})
	return ctx
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

// A term's observer, set only when the handle that took it has one.
type termObserver struct {
	o         Observer
	primitive Primitive
	name      string
	since     time.Time // when the term's first acquire was sent
}

// newObservedTerm returns a new term of the lock called name that reports
// its end to cfg's observer.
func newObservedTerm(cfg *config, primitive Primitive, name string) *term {
	t := &term{cfg: cfg, primitive: primitive, name: name}
	if cfg.observer != nil {
		t.obs = &termObserver{o: cfg.observer, primitive: primitive, name: name}
	}
	return t
}

// observeEnd reports the end of term t (with err, as in term.end) for a hold
// that began at since.
func (t *term) observeEnd(err error, since time.Time) {
	kind := EventReleased
	if errors.Is(err, ErrLockLost) {
		kind = EventLost
	}
	t.obs.o.Observe(context.Background(), Event{Kind: kind, Primitive: t.obs.primitive, Name: t.obs.name,
		Hold: time.Since(since), Cause: err})
}

// closedChan is what Done returns when there has been no hold.
var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()
