package redisync

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/notify"
	"github.com/go-redisync/redisync/internal/scripts"
)

// DefaultHeartbeatTimeout is how long a waiter queued for a [FairMutex] or a
// [Semaphore] keeps its place without proving that it is alive. A live waiter
// proves it every DefaultHeartbeatTimeout/3 and is never evicted, however long
// it waits; a waiter that crashed is removed from the queue, and the waiters
// behind it move up, at most this long after its last heartbeat. Change it with
// [WithHeartbeatTimeout].
const DefaultHeartbeatTimeout = 5 * time.Second

// WithHeartbeatTimeout sets the heartbeat timeout d of queued waiters (see
// [DefaultHeartbeatTimeout]): a waiter's heartbeat is renewed every d/3, and a
// waiter whose process died leaves the queue d after its last heartbeat. A
// shorter timeout moves a queue past a crashed waiter sooner and costs more
// renewals. d is rounded up to a whole millisecond and must be at least 3 ms.
func WithHeartbeatTimeout(d time.Duration) Option {
	return func(cfg *config) {
		if d < 3*time.Millisecond {
			cfg.err = fmt.Errorf("redisync: heartbeat timeout %v is below 3ms", d)
			return
		}
		cfg.heartbeat = d.Round(time.Millisecond)
		if cfg.heartbeat < d {
			cfg.heartbeat += time.Millisecond
		}
	}
}

// lastWaiter numbers the waiting calls of the process.
var lastWaiter atomic.Uint64

// queueWakeups counts the wake-ups that ended a queued waiter's wait (not its
// timer, not the subscription's confirmation); tests read it.
var queueWakeups atomic.Int64

// A ticket is one waiting call's place in a queue kept in Redis: the id it
// queues under (also the tag that wake-up messages name) and the heartbeat
// lease that keeps the place while the call waits. A ticket belongs to one
// goroutine, the waiting caller's; only its lapsed channel is written by the
// renewal scheduler.
type ticket struct {
	c      *Client
	id     string
	keys   []string // the heartbeat zset and the queue zset
	args   []string // the id and the heartbeat timeout in milliseconds
	ttl    time.Duration
	hb     *lease.Lease  // the heartbeat while queued, else nil
	lapsed chan struct{} // receives when a heartbeat ends by loss
}

// newTicket returns a ticket for a queue whose heartbeat and queue keys are
// alive and queue. The id is unique across Clients: "<client-uuid>:w<n>".
func (c *Client) newTicket(alive, queue string, cfg *config) *ticket {
	id := c.id + ":w" + strconv.FormatUint(lastWaiter.Add(1), 10)
	return &ticket{
		c:      c,
		id:     id,
		keys:   []string{alive, queue},
		args:   []string{id, strconv.FormatInt(cfg.heartbeat.Milliseconds(), 10)},
		ttl:    cfg.heartbeat,
		lapsed: make(chan struct{}, 1),
	}
}

// hbMS returns the heartbeat timeout in milliseconds, as scripts take it.
func (tk *ticket) hbMS() string { return tk.args[1] }

// queued records that a request sent at sent placed the ticket in its queue,
// or kept it there, with a fresh heartbeat deadline; it starts the heartbeat
// renewals if they are not running.
func (tk *ticket) queued(sent time.Time) {
	if tk.hb != nil {
		tk.c.leases.Touch(tk.hb, sent)
		return
	}
	tk.hb = &lease.Lease{
		Key:   tk.keys[0],
		Renew: scripts.FairHeartbeat,
		Keys:  tk.keys,
		Args:  tk.args,
		TTL:   tk.ttl,
		Lost: lease.ReportFunc(func(error) {
			// The place may be gone (reaped, or counted dead after failed
			// renewals). The waiter tries again, which queues it anew.
			select {
			case tk.lapsed <- struct{}{}:
			default:
			}
		}),
	}
	tk.c.leases.Add(tk.hb, sent)
}

// stop ends the heartbeat renewals.
func (tk *ticket) stop() {
	if tk.hb != nil {
		tk.c.leases.Remove(tk.hb)
		tk.hb = nil
	}
}

// A queuedAcquirer is what the queue loop needs from a primitive whose
// waiters queue in Redis (FairMutex, Semaphore).
type queuedAcquirer interface {
	// try makes one attempt to acquire in the ticket's turn; when it does not
	// acquire, it queues the ticket or keeps its place (and then calls
	// tk.queued). Attempts must be idempotent: after a failure of unknown
	// outcome, trying again must neither take twice nor queue twice.
	try(ctx context.Context, tk *ticket) (attempt, error)
	// leave takes the ticket out of the queue and releases what a failed
	// attempt of unknown outcome may have taken. It must be idempotent.
	leave(ctx context.Context, tk *ticket)
	// primitive names the lock's sort in events (Event.Primitive).
	primitive() string
}

// acquireQueued is the waiter loop of the queued primitives, the counterpart
// of acquire: try; when not acquired, join the channel tagged with the
// ticket's id (a release wakes only the waiter whose turn it is), wait for the
// subscription, try again; then wait for the first of a wake-up, the wait
// bound the script gave (the holder's lease for the head, the heartbeat
// deadline of the waiter ahead for the others), the loss of the ticket's
// heartbeat, or the end of ctx.
//
// Failures are handled as in acquire. Whatever it returns, acquireQueued leaves
// no heartbeat and no subscription behind and, when it fails, no queue entry
// and no hold: the ticket always leaves the queue on failure, since unlike a
// plain waiter a queued one blocks everyone behind it until its heartbeat
// lapses.
func (c *Client) acquireQueued(ctx context.Context, name, channel string, a queuedAcquirer, tk *ticket, forever bool, cfg *config) (err error) {
	var start time.Time // the call's start, taken only for an observer
	if cfg.observer != nil {
		start = observeAttempt(ctx, cfg, a.primitive(), name)
	}
	var w *notify.Waiter
	defer func() {
		tk.stop()
		if w != nil {
			w.Leave(false) // a swallowed turn is passed on by leave's script
		}
		if err != nil {
			a.leave(ctx, tk)
		}
		if err != nil && cfg.observer != nil {
			observeFailed(ctx, cfg, a.primitive(), name, start, err)
		}
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var firstFailure time.Time
	for failures := 0; ; {
		if c.isClosed() {
			return lockError(name, ErrClosed)
		}
		res, tryErr := a.try(ctx, tk)
		if ctx.Err() != nil && !res.acquired {
			return ctx.Err()
		}
		if tryErr != nil && failures == 0 {
			firstFailure = time.Now()
		}
		var wake <-chan struct{}
		message := false
		switch {
		case tryErr != nil && (errors.Is(tryErr, errSizeMismatch) ||
			!forever && (!ambiguous(tryErr) || time.Since(firstFailure) >= transientBudget)):
			return tryErr
		case tryErr != nil:
			failures++
			if forever && (failures == 3 || failures%100 == 0) {
				cfg.logger.Warn("redisync: lock attempts failing; retrying", "name", name, "attempts", failures, "error", tryErr)
			}
			d := min(time.Duration(failures)*20*time.Millisecond, time.Second)
			timer.Reset(d/2 + rand.N(d))
		case res.acquired:
			if cfg.observer != nil {
				observeAcquired(ctx, cfg, a.primitive(), name, start, res)
			}
			return nil
		case w == nil:
			failures = 0
			if cfg.observer != nil {
				observeQueued(ctx, cfg, a.primitive(), name) // the reply just placed tk in the queue
			}
			w = c.notify.JoinTagged(channel, tk.id)
			wake = w.Ready()
			timer.Reset(waitBound(res.wait))
		default:
			failures = 0
			wake, message = w.Wake(), true
			timer.Reset(waitBound(res.wait))
		}
		select {
		case <-wake:
			if message {
				queueWakeups.Add(1)
			}
			if cfg.observer != nil && message {
				observeWait(ctx, cfg, a.primitive(), name, w, WakePubSub, true)
			}
		case <-res.free: // nil unless the owner's own hold blocks the turn
			if cfg.observer != nil {
				observeWait(ctx, cfg, a.primitive(), name, w, WakeLocal, true)
			}
		case <-timer.C:
			if cfg.observer != nil && message {
				observeWait(ctx, cfg, a.primitive(), name, w, WakePubSub, false)
			}
		case <-tk.lapsed:
			tk.hb = nil // ended; the next try queues again and restarts it
		case <-ctx.Done():
			return ctx.Err()
		case <-c.closed:
			return lockError(name, ErrClosed)
		}
	}
}
