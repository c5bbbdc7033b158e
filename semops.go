package redisync

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/scripts"
)

// semAcquirer makes the acquire attempts of one Acquire or TryAcquire call.
type semAcquirer struct {
	s *Semaphore
	n int64
}

func (a semAcquirer) primitive() string { return PrimitiveSemaphore }

// try makes one attempt; with a nil ticket it does not queue (TryAcquire).
// The holder's count is sent as an absolute value (held + n), so an attempt
// repeated after a lost reply cannot take twice.
func (a semAcquirer) try(ctx context.Context, tk *ticket) (attempt, error) {
	s, c := a.s, a.s.c
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endLostTerm()
	target := s.held + a.n
	id, hbMS := "", "0"
	if tk != nil {
		id, hbMS = tk.id, tk.hbMS()
	}
	sent := time.Now()
	reply, err := c.scripts.Exec(ctx, scripts.Call{
		Script: scripts.SemAcquire,
		Keys:   s.keys,
		Args: []string{s.sizeArg, s.holder, strconv.FormatInt(a.n, 10), strconv.FormatInt(target, 10),
			s.leaseMS, id, hbMS, c.publish},
	}).AsIntSlice()
	if err == nil && len(reply) != 2 {
		err = fmt.Errorf("sem_acquire replied %d values", len(reply))
	}
	if err != nil {
		return attempt{}, lockError(s.name, err)
	}
	switch reply[0] {
	case 1:
	case -2:
		return attempt{}, fmt.Errorf("redisync: semaphore %q: %w: the handle's size is %d, Redis has %d",
			s.name, errSizeMismatch, s.size, reply[1])
	default:
		if tk != nil {
			tk.queued(sent)
		}
		return attempt{wait: waitMS(reply[1])}, nil
	}
	reentered := s.held > 0
	if !reentered {
		t := newObservedTerm(c, &s.cfg, PrimitiveSemaphore, s.name)
		t.lease = s.newLease(t)
		h := c.ref(holdKey{kind: semaphore, name: s.keys[0], owner: s.handle}, true)
		c.begin(h, t, sent)
		c.unref(h) // begin holds the record while the term lasts
		s.rec = h
		s.cur.Store(t)
		if c.isClosed() {
			t.end(lockError(s.name, ErrClosed))
		}
	} else {
		c.leases.Touch(s.rec.term.Load().lease, sent)
	}
	s.held = target
	return attempt{acquired: true, reentered: reentered}, nil
}

// leave takes the ticket (if any) out of the queue and sets the holder's
// count back to what this handle knows, giving back what an attempt of
// unknown outcome may have taken. Both are idempotent.
func (a semAcquirer) leave(ctx context.Context, tk *ticket) {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	id := ""
	if tk != nil {
		id = tk.id
	}
	if _, err := s.setHeld(context.WithoutCancel(ctx), s.held, id, cleanupBudget); err != nil {
		s.cfg.logger.Warn("redisync: could not leave the semaphore's queue; the entry goes when its heartbeat lapses",
			"name", s.name, "error", err)
	}
}

// newLease describes the lease of term t for the scheduler.
func (s *Semaphore) newLease(t *term) *lease.Lease {
	l := &t.own
	*l = lease.Lease{
		Key:  s.keys[1],
		Keys: []string{s.keys[1], s.keys[0]},
		Args: []string{s.holder, s.leaseMS},
		TTL:  s.cfg.leaseTTL(),
		Lost: t,
	}
	if s.cfg.lease == 0 {
		l.Renew = scripts.SemRenew
	}
	return l
}

// endLostTerm (s.mu held) acknowledges a term that ended by loss or Close:
// its permits are no longer held, but Release may still take them back.
func (s *Semaphore) endLostTerm() {
	if s.rec == nil {
		return
	}
	if ended, _ := s.rec.term.Load().result(); ended {
		s.lost += s.held
		s.held = 0
		s.c.finish(s.rec)
		s.rec = nil
	}
}

// release gives back n permits (see Release).
func (s *Semaphore) release(n int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endLostTerm()
	if n > s.held+s.lost {
		panic("redisync: semaphore released more than held")
	}
	fromLost := min(n, s.lost)
	s.lost -= fromLost
	if n -= fromLost; n == 0 {
		return nil
	}
	keep := s.held - n
	t := s.rec.term.Load()
	if keep == 0 && !s.c.leases.Remove(t.lease) {
		// The scheduler has just found it lost; its report is on the way.
		s.c.lost(t, s.name, &s.cfg, lease.ErrExpired)
	}
	status, err := s.setHeld(context.Background(), keep, "", releaseBudget)
	s.held = keep
	switch {
	case err != nil:
		if keep == 0 {
			t.end(err)
		}
	case status < 0:
		s.c.leases.Remove(t.lease)
		s.c.lost(t, s.name, &s.cfg, errHoldGone)
	case keep == 0:
		t.end(nil)
	}
	if keep == 0 {
		s.c.finish(s.rec)
		s.rec = nil
	} else if ended, _ := t.result(); ended {
		s.endLostTerm()
	}
	return err
}

// setHeld sets the holder's count to keep (0 gives every permit back) and
// takes waiter id, if not empty, out of the queue, retrying a lost reply for
// up to budget; it wakes the waiters that fit now. It returns -1 when the
// holder had no permits left to keep.
func (s *Semaphore) setHeld(ctx context.Context, keep int64, id string, budget time.Duration) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	reply, err := s.c.scripts.Exec(ctx, scripts.Call{
		Script:    scripts.SemRelease,
		Keys:      s.keys,
		Args:      []string{s.holder, strconv.FormatInt(keep, 10), id, s.c.publish},
		Retryable: true, // idempotent: the count is set, the waiter removed by id
	}).ToArray()
	if err == nil && len(reply) == 0 {
		err = fmt.Errorf("sem_release replied nothing")
	}
	if err != nil {
		return 0, lockError(s.name, err)
	}
	status, err := reply[0].AsInt64()
	if err != nil {
		return 0, lockError(s.name, err)
	}
	for _, r := range reply[1:] {
		if woken, err := r.ToString(); err == nil {
			s.c.notify.WakeTag(s.keys[6], woken)
		}
	}
	return status, nil
}
