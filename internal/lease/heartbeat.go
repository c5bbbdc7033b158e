package lease

import (
	"strconv"
	"time"

	"github.com/go-redisync/redisync/internal/scripts"
)

// A Heartbeat is a waiting call's place in a queue kept in Redis (a
// FairMutex's or a Semaphore's): the id it queues under, which wake-up
// messages name, and the lease that proves the waiter alive while it waits.
// It belongs to the waiting goroutine; only Lapsed is written by the
// scheduler.
type Heartbeat struct {
	ID        string
	TimeoutMS string // the heartbeat timeout in milliseconds, as scripts take it
	// Lapsed receives why the heartbeat ended by loss: ErrNotHeld, Redis no
	// longer had the place (reaped, or deleted); ErrExpired, its deadline
	// passed without a confirmed renewal. The waiter then calls Ended and
	// tries again, which queues it anew.
	Lapsed chan error
	// OnLapse, if set, is woken after each report on Lapsed (on the
	// scheduler's goroutine: its Wake must not block), so that the waiter
	// looks. The waiter sets it before its first Queued.
	OnLapse Waker

	s     *Scheduler
	renew *scripts.Script
	keys  []string // the heartbeats' zset and the queue's
	args  []string // the id and the timeout
	ttl   time.Duration
	l     *Lease // renewed while queued, else nil
}

// A Waker wakes a waiting goroutine without blocking.
type Waker interface{ Wake() }

// NewHeartbeat returns the heartbeat of the waiter id in the queue whose
// heartbeat and queue keys are alive and queue, renewed by s every third of
// ttl once the waiter is queued.
func (s *Scheduler) NewHeartbeat(id, alive, queue string, ttl time.Duration) *Heartbeat {
	return s.NewHeartbeatBy(scripts.FairHeartbeat, id, alive, queue, ttl)
}

// NewHeartbeatBy returns a heartbeat as NewHeartbeat does, renewed by the
// script renew, which is given the keys alive and queue and the arguments
// id, the timeout in milliseconds and extra for each waiter.
func (s *Scheduler) NewHeartbeatBy(renew *scripts.Script, id, alive, queue string, ttl time.Duration, extra ...string) *Heartbeat {
	ms := strconv.FormatInt(ttl.Milliseconds(), 10)
	return &Heartbeat{ID: id, TimeoutMS: ms, Lapsed: make(chan error, 1), s: s, renew: renew,
		keys: []string{alive, queue}, args: append([]string{id, ms}, extra...), ttl: ttl}
}

// Queued records that a request sent at sent placed the waiter in its queue,
// or kept it there, with a fresh deadline; it starts the renewals if they are
// not running.
func (h *Heartbeat) Queued(sent time.Time) {
	if h.l != nil {
		h.s.Touch(h.l, sent)
		return
	}
	h.l = &Lease{Key: h.keys[0], Renew: h.renew, Keys: h.keys, Args: h.args, TTL: h.ttl,
		Lost: ReportFunc(func(err error) {
			select {
			case h.Lapsed <- err:
			default:
			}
			if h.OnLapse != nil {
				h.OnLapse.Wake()
			}
		})}
	h.s.Add(h.l, sent)
}

// Confirmed returns the time the latest request that confirmed the waiter's
// place was sent (the heartbeat deadline it set, less the timeout, is after
// it), and false when the heartbeat is not running.
func (h *Heartbeat) Confirmed() (time.Time, bool) {
	if h.l == nil {
		return time.Time{}, false
	}
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	if h.l.state != waiting && h.l.state != inflight {
		return time.Time{}, false
	}
	return h.l.deadline.Add(margin(h.ttl) - h.ttl), true
}

// Ended forgets a heartbeat that Lapsed reported ended: the next Queued
// starts anew.
func (h *Heartbeat) Ended() { h.l = nil }

// Stop ends the renewals.
func (h *Heartbeat) Stop() {
	if h.l != nil {
		h.s.Remove(h.l)
		h.l = nil
	}
}
