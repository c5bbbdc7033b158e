package redisync

import (
	"context"
	"strconv"
	"time"
)

// A Mutex's waiting calls queue in Redis, next to the lock (our own keys,
// which Redisson ignores), and a release hands the lock to the first live
// one inside its script: the waiter's field holds the lock at once, and the
// message names the waiter's place. The waiter takes the hold from the
// message without asking Redis again, so a handover costs the release's
// message and nothing else, and no other acquire races it for the lock.
//
// Waiters stay crash-safe by heartbeat (the scheduler's batch, as for a
// FairMutex): a release skips and removes a waiter whose heartbeat lapsed,
// and the hold it hands over expires at the waiter's heartbeat deadline
// until the waiter renews it with its lease, so a waiter that died just
// before it was handed the lock keeps it for at most the heartbeat timeout.
// A call queues only after a first attempt found the lock taken (most
// acquisitions need no queue), and a call whose hold came another way (a
// handover within the Client) leaves the queue when it returns (giveUp).

// queueEarly makes the waiting Mutex call of l queue in Redis with its
// first attempt, joined to its lock's channel beforehand, when the lock is
// contended in this process: the channel's subscription is in place (a
// waiter of this Client waited for the lock within the subscription's
// linger) and no other call of the Client waits for it. A contended call
// then spares the attempt that would find the lock taken before queueing;
// one that finds it free takes it as mutex_acquire would.
func (c *Client) queueEarly(l *waitLoop) {
	a, p := l.a, l.a.p
	if !p.waitQueue || !a.takesHanded() || a.call.uncertain() || !c.notify.Confirmed(p.channel) || c.waiting(p) > 0 {
		return
	}
	c.callField(a)
	l.joined = p.channel
	l.w = c.notify.Join(p.channel, p.policy, "")
	l.tk = p.ticket(a)
}

// placeTag is the tag of a waiter at place n in a Mutex's queue: the
// message of a release that hands it the lock ("" for no place).
func placeTag(n int64) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}

// mutexTicket returns the place in the queue of m's lock of the waiting
// call a, whose field is its id there.
func (m *Mutex) mutexTicket(a *caller) *ticket {
	return m.c.leases.NewHeartbeat(a.call.field, m.keys[4], m.keys[3], a.p.cfg.heartbeat)
}

// takeHanded makes the lock that a release in Redis handed to the queued
// call of l (a wake-up named its place) the call's hold, without asking
// Redis, and reports whether it did. The hold's deadline is the call's
// heartbeat timeout after the latest confirmation of its place was sent:
// the release found the place after that, and left the lock to expire at
// the place's heartbeat deadline. It does not take the hold when the place
// is no longer confirmed (its heartbeat lapsed), its deadline has passed
// (the process was paused), or the call's owner holds the lock meanwhile:
// the call then asks Redis, which answers what the release did (the call's
// field is there, and the attempt adopts it), or gives it back when it
// returns.
func (c *Client) takeHanded(ctx context.Context, l *waitLoop) bool {
	a, p := l.a, l.a.p
	since, ok := l.tk.Confirmed()
	if !ok || a.call.field == "" || time.Since(since) >= p.cfg.heartbeat {
		return false // after a pause past the deadline, only Redis knows
	}
	h := c.ref(p.key, true)
	defer c.unref(h)
	if !c.lockOp(ctx, h, a) {
		return false
	}
	defer h.op.Unlock()
	if h.count > 0 {
		return false
	}
	acq := acquisition{h: h, n: a.n, field: a.call.field, within: p.cfg.heartbeat}
	c.took(h, a, &acq, since)
	t := h.term.Load()
	a.value, a.term = 0, t
	p.cur.Store(t)
	return true
}
