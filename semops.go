package redisync

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/scripts"
)

// lastVersion numbers the changes that Semaphore handles make to their
// entries in Redis: a call writes a version greater than any sent before, and
// applies only over one its handle has seen confirmed or sent since, so that
// a call arriving after a later one of the same term changes nothing.
var lastVersion atomic.Uint64

// Replies of the semaphore scripts besides granted (1) and queued (0).
const (
	semSizeMismatch = -2
	semGone         = -3 // the term's entry is gone: its lease lapsed
	semStale        = -4 // a call older than the entry's version
)

// semAcquirer makes the acquire attempts of one Acquire or TryAcquire call.
type semAcquirer struct {
	s *Semaphore
	n int64
	// sent records that an attempt reached Redis, unknown that one had an
	// unknown outcome (its leave then sets the count back).
	sent, unknown bool
}

func (a *semAcquirer) primitive() string { return PrimitiveSemaphore }

// try makes one attempt; with a nil ticket it does not queue (TryAcquire),
// and does not wait for another call of the handle either. The holder's count
// is sent as an absolute value (held + n), compare-and-set by version, so an
// attempt repeated after a lost reply cannot take twice.
func (a *semAcquirer) try(ctx context.Context, tk *ticket) (attempt, error) {
	s, c := a.s, a.s.c
	if tk == nil {
		if !s.op.tryLock() {
			return attempt{}, nil
		}
	} else if err := s.op.lock(ctx); err != nil {
		return attempt{}, err
	}
	defer s.op.unlock()
	s.endLostTerm()
	if s.holder == "" {
		s.holder = c.newField(s.handle, "") // one id per term
	}
	target := s.held + a.n
	version := lastVersion.Add(1)
	id, hbMS := "", "0"
	if tk != nil {
		id, hbMS = tk.id, tk.hbMS()
	}
	s.changing()
	sent := time.Now()
	a.sent = true
	reply, err := c.scripts.Exec(ctx, scripts.Call{
		Script: scripts.SemAcquire,
		Keys:   s.keys,
		Args: []string{s.sizeArg, s.holder, strconv.FormatInt(a.n, 10), strconv.FormatInt(target, 10),
			s.leaseMS, id, hbMS, c.publish, strconv.FormatUint(s.version, 10), strconv.FormatUint(version, 10)},
	}).AsIntSlice()
	if err == nil && len(reply) != 2 {
		err = fmt.Errorf("sem_acquire replied %d values", len(reply))
	}
	if err != nil {
		if ambiguous(err) {
			a.unknown, s.pending, s.unknown = true, true, true
		}
		s.settled()
		return attempt{}, lockError(s.name, err)
	}
	switch reply[0] {
	case 1:
	case semSizeMismatch:
		s.settled()
		return attempt{}, fmt.Errorf("redisync: semaphore %q: %w: the handle's size is %d, Redis has %d",
			s.name, errSizeMismatch, s.size, reply[1])
	case semGone:
		// The term's permits lapsed: report it, and try again in a new term.
		t := s.rec.term.Load()
		c.leases.Remove(t.lease)
		c.lost(t, s.name, &s.cfg, errHoldGone)
		s.endLostTerm()
		return attempt{}, nil
	case semStale:
		s.settled()
		return attempt{}, lockError(s.name, errRefused)
	default:
		s.settled()
		if tk != nil {
			tk.queued(sent)
		}
		return attempt{wait: waitMS(reply[1])}, nil
	}
	s.confirm(target, version)
	reentered := s.rec != nil
	if !reentered {
		t := newObservedTerm(c, &s.cfg, PrimitiveSemaphore, s.name)
		t.field = s.holder
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
	return attempt{acquired: true, reentered: reentered}, nil
}

// leave takes the ticket (if any) out of the queue and, when an attempt's
// outcome is unknown, sets the holder's count back to what the handle knows
// it holds, giving back what that attempt may have taken. Both are
// idempotent.
func (a *semAcquirer) leave(ctx context.Context, tk *ticket) {
	s := a.s
	if !a.sent {
		return // nothing reached Redis
	}
	id := ""
	if tk != nil {
		id = tk.id
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupBudget)
	defer cancel()
	var err error
	if !a.unknown {
		// Only the queue entry: the handle's own entry is as it knows it.
		_, err = s.write(ctx, "", 0, id, 0, 0, "0")
	} else {
		_ = s.op.lock(context.Background())
		err = s.setBack(ctx, id)
		s.op.unlock()
	}
	if err != nil {
		s.cfg.logger.Warn("redisync: could not leave the semaphore's queue; the entry goes when its heartbeat lapses",
			"name", s.name, "error", err)
	}
}

// setBack (s.op held) sets the holder's entry to the permits the handle
// knows it holds, over whatever a call of unknown outcome did, and takes
// waiter id, if not empty, out of the queue.
func (s *Semaphore) setBack(ctx context.Context, id string) error {
	version := lastVersion.Add(1)
	latch := "0"
	if s.held == 0 {
		latch = tombstoneTTL // the term's first acquire may still arrive
	}
	s.changing()
	status, err := s.write(ctx, s.holder, s.held, id, s.version, version, latch)
	switch {
	case err != nil:
		s.settled()
		return err
	case status == 1 && s.held == 0:
		if s.rec == nil {
			s.holder, s.version, s.pending, s.unknown = "", 0, false, false
		}
	case status == 1:
		s.confirm(s.held, version)
		return nil
	}
	s.settled()
	return nil
}

// newLease describes the lease of term t for the scheduler.
func (s *Semaphore) newLease(t *term) *lease.Lease {
	l := &t.own
	*l = lease.Lease{
		Key:  s.keys[1],
		Keys: []string{s.keys[1], s.keys[0]},
		Args: s.renewArgs(),
		TTL:  s.cfg.leaseTTL(),
		Lost: t,
	}
	if s.cfg.lease == 0 {
		l.Renew = scripts.SemRenew
	}
	return l
}

// renewArgs (s.op held) returns the renewal's ARGV: the holder, the lease
// and the entry the handle knows it has.
func (s *Semaphore) renewArgs() []string {
	return []string{s.holder, s.leaseMS, strconv.FormatInt(s.held, 10) + ":" + strconv.FormatUint(s.version, 10)}
}

// changing (s.op held) tells the renewal that a call may change the entry.
func (s *Semaphore) changing() {
	if s.rec != nil {
		s.c.leases.Changing(s.rec.term.Load().lease)
	}
}

// confirm (s.op held) records that Redis has the holder's entry at held
// permits and version, and tells the renewal.
func (s *Semaphore) confirm(held int64, version uint64) {
	s.held, s.version, s.pending = held, version, false
	s.heldNow.Store(held)
	if s.rec != nil {
		s.c.leases.Update(s.rec.term.Load().lease, s.renewArgs())
	}
}

// settled (s.op held) ends a change that did not happen, unless a call of
// unknown outcome still leaves the entry in doubt.
func (s *Semaphore) settled() {
	if s.rec != nil && !s.pending {
		s.c.leases.Update(s.rec.term.Load().lease, s.renewArgs())
	}
}

// endLostTerm (s.op held) acknowledges a term that ended by loss or Close:
// its permits are no longer held, but Release may still take them back. Its
// entry, if any is left in Redis, expires with its lease.
func (s *Semaphore) endLostTerm() {
	if s.rec == nil {
		return
	}
	if ended, _ := s.rec.term.Load().result(); ended {
		s.lost += s.held
		s.endTerm()
	}
}

// endTerm (s.op held) forgets the current term.
func (s *Semaphore) endTerm() {
	s.held, s.holder, s.version, s.pending, s.unknown = 0, "", 0, false, false
	s.heldNow.Store(0)
	s.c.finish(s.rec)
	s.rec = nil
}

// release gives back n permits (see Release).
func (s *Semaphore) release(n int64) error {
	_ = s.op.lock(context.Background())
	defer s.op.unlock()
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
	if keep == 0 {
		if !s.c.leases.Remove(t.lease) {
			// The scheduler has just found it lost; its report is on the way.
			s.c.lost(t, s.name, &s.cfg, lease.ErrExpired)
		}
		return s.releaseAll(t)
	}
	s.changing()
	ctx, cancel := context.WithTimeout(context.Background(), releaseBudget)
	defer cancel()
	version := lastVersion.Add(1)
	status, err := s.write(ctx, s.holder, keep, "", s.version, version, "0")
	switch {
	case err != nil:
		// The handle counts the permits as given back; the entry is in doubt
		// until its next confirmed call.
		s.held, s.pending, s.unknown = keep, true, true
		s.heldNow.Store(keep)
		s.settled()
	case status == 1:
		s.confirm(keep, version)
	default:
		// Gone (lapsed) or changed by someone else: a loss.
		s.held = keep
		s.heldNow.Store(keep)
		s.c.leases.Remove(t.lease)
		s.c.lost(t, s.name, &s.cfg, errHoldGone)
		s.endLostTerm()
	}
	return err
}

// releaseAll (s.op held) gives back every permit of term t, ending it.
func (s *Semaphore) releaseAll(t *term) error {
	ctx, cancel := context.WithTimeout(context.Background(), releaseBudget)
	defer cancel()
	latch := "0"
	if s.unknown {
		latch = tombstoneTTL // a copy of the term's first acquire may still arrive
	}
	status, err := s.write(ctx, s.holder, 0, "", s.version, lastVersion.Add(1), latch)
	switch {
	case err != nil:
		t.end(err)
	case status == semStale:
		s.c.lost(t, s.name, &s.cfg, errHoldGone)
	default:
		t.end(nil)
	}
	s.endTerm()
	return err
}

// write runs sem_release: the holder's entry goes from version expect (or a
// later one of its own) to keep permits at version (0 deletes it, leaving a
// latch for latch milliseconds unless that is "0"), and waiter id, if not
// empty, leaves the queue; it wakes the waiters that fit now. A lost reply
// may be repeated (the script is compare-and-set). It returns the script's
// status: 1 done, -1 the holder had no permits left to keep, -4 a stale
// call.
func (s *Semaphore) write(ctx context.Context, holder string, keep int64, id string, expect, version uint64, latch string) (int64, error) {
	reply, err := s.c.scripts.Exec(ctx, scripts.Call{
		Script: scripts.SemRelease,
		Keys:   s.keys,
		Args: []string{holder, strconv.FormatInt(keep, 10), id, s.c.publish,
			strconv.FormatUint(expect, 10), strconv.FormatUint(version, 10), latch},
		Retryable: true, // compare-and-set by version; the waiter removed by id
	}).ToArray()
	if err == nil && len(reply) == 0 {
		err = errors.New("sem_release replied nothing")
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
