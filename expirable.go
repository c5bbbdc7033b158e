package redisync

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/scripts"
)

// An ExpirableSemaphore is a count of free permits in Redisson's
// RPermitExpirableSemaphore layout: each permit taken has an id and a lease
// of its own, chosen by the call that takes it, and goes back to the count
// when it is released by id or when its lease ends. A Java service's
// RPermitExpirableSemaphore of the same name takes and gives back the same
// permits, a release on either side wakes the waiters of both, and an id
// taken on one side can be released or renewed on the other. The first use
// of the name sets the count to the handle's size, as Java's trySetPermits
// does; a count set already is kept.
//
// It is Redisson's semaphore, with Redisson's terms, which [Semaphore] does
// not have:
//
//   - A lease is fixed: the watchdog does not renew it. A holder that needs
//     longer renews it with [ExpirableSemaphore.Renew], or its permit goes
//     back to the count when the lease ends, held or not, and another call
//     may take it. Nothing tells the holder; its Release then returns an
//     error. A permit taken without a lease (0) never goes back by itself:
//     if its process dies, count it back by hand.
//   - Leases end by the clock of the process that took the permit (Java)
//     or the server's (Go); a Java client whose clock runs ahead ends Go's
//     leases early, and one behind keeps its own permits longer.
//   - Waiters are not served in order, and a waiter for a permit whose
//     lease ends looks again at that end (at least every second), since
//     nobody publishes an end.
//
// Each call keeps a latch in Redis for a minute (one small key per call,
// redisync_rsem_latch:{name}:<id>), so that a repeat of an attempt whose
// reply was lost takes its permits once, and a late copy of an attempt
// whose call gave up takes nothing. An ExpirableSemaphore must not be copied
// after first use.
type ExpirableSemaphore struct {
	h       handle // its Client, options and name; it holds nothing the Client tracks
	l       layout.ExpirableSem
	size    int64
	sizeArg string
	p       *protocol
}

// NewExpirableSemaphore returns a handle on the semaphore called name in
// Redisson's RPermitExpirableSemaphore layout, whose count starts at size
// when the name is first used. Names and panics are as for
// [Client.NewMutex]; it also panics if size is negative or above
// [MaxSemaphoreSize]. Lease options have no effect: each Acquire gives its
// permits' lease.
func (c *Client) NewExpirableSemaphore(name string, size int64, opts ...Option) *ExpirableSemaphore {
	c.single("NewExpirableSemaphore")
	if size < 0 {
		panic("redisync: expirable semaphore size < 0")
	}
	if size > MaxSemaphoreSize {
		panic("redisync: expirable semaphore size > MaxSemaphoreSize")
	}
	s := &ExpirableSemaphore{l: layout.ExpirableSemOf(name), size: size, sizeArg: strconv.FormatInt(size, 10)}
	c.initHandle(&s.h, PrimitiveExpirableSemaphore, name, opts)
	p := s.h.protocol(exclusive, s.l.Key, s.h.owner, PrimitiveExpirableSemaphore, s.l.Channel, countingPolicy)
	p.acquire = func(ctx context.Context, a acquisition) (scripts.Reply, error) {
		r, err := c.scripts.AcquireExpirable(ctx, &s.l, a.field, s.sizeArg, a.permitLease, tombstoneTTL, permitIDs(a.field, a.n, idBytes))
		switch {
		case err != nil:
			return r, err
		case r.Outcome == scripts.Acquired:
			return scripts.Reply{Outcome: scripts.Complete}, nil
		case r.Outcome == scripts.Busy:
			// A release on either side publishes the count; the end of
			// the earliest lease publishes nothing, so the waiter looks
			// again then, and at least every second.
			wait := r.Value
			if wait < 1 || wait > recheckMS {
				wait = recheckMS
			}
			return scripts.Reply{Outcome: scripts.Busy, Value: wait}, nil
		}
		return r, nil
	}
	p.undo = func(ctx context.Context, field string, n int) error {
		_, err := c.scripts.UndoExpirable(ctx, &s.l, field, tombstoneTTL, permitIDs(field, n, idBytes))
		return err
	}
	s.p = p
	return s
}

// MaxPermitsPerCall is the most permits that one call of an
// [ExpirableSemaphore] takes: each has an id of its own, which the call
// sends and Redis records, one by one, in a script that holds up the server
// while it runs (a few milliseconds for this many).
const MaxPermitsPerCall = 4096

// tooMany panics if n is negative, and returns the error of a request for
// n permits when one call cannot carry that many (see MaxPermitsPerCall).
func (s *ExpirableSemaphore) tooMany(n int) error {
	switch {
	case n < 0:
		panic("redisync: expirable semaphore: n < 0")
	case n > MaxPermitsPerCall:
		return fmt.Errorf("redisync: ExpirableSemaphore %q: %d permits in one call, more than MaxPermitsPerCall (%d)",
			s.h.name, n, MaxPermitsPerCall)
	}
	return nil
}

// permitIDs returns the ids of the n permits that the call field asks for,
// as Redisson's: 16 bytes each, shown as 32 hex digits, derived from the
// field so that every attempt of the call, and its undo, name the same
// permits, in form f: the bytes (what Redis records) or the hex digits (what
// callers see).
func permitIDs(field string, n int, f idForm) []string {
	ids := make([]string, n)
	for i := range ids {
		sum := sha256.Sum256([]byte(field + ":" + strconv.Itoa(i)))
		if f == idBytes {
			ids[i] = string(sum[:16])
		} else {
			ids[i] = hex.EncodeToString(sum[:16])
		}
	}
	return ids
}

// An idForm is how permitIDs writes an id.
type idForm uint8

const (
	idText  idForm = iota // 32 hex digits, as callers see it
	idBytes               // its 16 bytes, as Redis records it
)

// permitMembers returns the two members under which each of ids may be
// recorded: its 16 bytes (redisync's and recent Redisson's), then its text
// (older Redisson's). An id that is not 32 hex digits is recorded as text
// only; its first member is then one no permit has.
func permitMembers(ids []string) []string {
	members := make([]string, 0, 2*len(ids))
	for _, id := range ids {
		b, err := hex.DecodeString(id)
		if err != nil || len(b) != 16 {
			b = []byte("\x00not-an-id")
		}
		members = append(members, string(b), id)
	}
	return members
}

// leaseArg is the lease argument of the scripts: milliseconds, or "-1" for
// none. It panics if lease is negative or under a millisecond.
func leaseArg(lease time.Duration) string {
	switch {
	case lease == 0:
		return "-1"
	case lease < time.Millisecond:
		panic("redisync: expirable semaphore: lease < 1ms (0 for none)")
	}
	return strconv.FormatInt(lease.Milliseconds(), 10)
}

// Name returns the semaphore's name, as given to its constructor.
func (s *ExpirableSemaphore) Name() string { return s.h.name }

// Acquire takes one permit leased for lease (0: no lease, as Redisson's
// acquire()), blocking until one is free or ctx is done, and returns its id.
// When ctx ends first it returns ctx.Err(), having taken nothing. A Redis
// failure is returned, wrapped; what an attempt of unknown outcome may have
// taken is given back (in the background when Redis does not answer at once). It panics if lease is negative or under a
// millisecond.
func (s *ExpirableSemaphore) Acquire(ctx context.Context, lease time.Duration) (string, error) {
	ids, err := s.AcquireN(ctx, 1, lease)
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// AcquireN takes n permits at once, each leased for lease, as Acquire does,
// and returns their ids. A request for 0 returns none at once, and one for
// more than [MaxPermitsPerCall] returns an error at once. It panics if n is
// negative.
func (s *ExpirableSemaphore) AcquireN(ctx context.Context, n int, lease time.Duration) ([]string, error) {
	tooMany := s.tooMany(n)
	arg := leaseArg(lease)
	switch {
	case tooMany != nil:
		return nil, tooMany
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case n == 0:
		return []string{}, nil
	}
	a := &call{p: s.p, mode: share, n: n, permitLease: arg}
	if err := s.h.c.acquire(ctx, a, nil, returnErrors); err != nil {
		return nil, err
	}
	return permitIDs(a.field, n, idText), nil
}

// TryAcquire takes one permit leased for lease if one is free, without
// waiting, and returns its id and true; else "" and false. A Redis failure
// counts as a failure and is logged (an attempt of unknown outcome is
// undone first). It panics as Acquire does.
func (s *ExpirableSemaphore) TryAcquire(lease time.Duration) (string, bool) {
	ids, ok := s.TryAcquireN(1, lease)
	if !ok {
		return "", false
	}
	return ids[0], true
}

// TryAcquireN takes n permits leased for lease if n are free, without
// waiting, as TryAcquire does. A request for more than [MaxPermitsPerCall]
// fails, and is logged, without asking Redis. It panics if n is negative.
func (s *ExpirableSemaphore) TryAcquireN(n int, lease time.Duration) ([]string, bool) {
	tooMany := s.tooMany(n)
	arg := leaseArg(lease)
	switch {
	case tooMany != nil:
		s.h.cfg.logger.Warn("redisync: TryAcquire failed", "name", s.h.name, "error", tooMany)
		return nil, false
	case n == 0:
		return []string{}, true
	}
	field, ok := s.h.tryCount(s.p, n, arg)
	if !ok {
		return nil, false
	}
	return permitIDs(field, n, idText), true
}

// Release gives the permits ids back and publishes the count, which wakes
// the waiters of every process, Java's included. It returns nil when each
// was taken with its lease running. When a lease had ended the permit goes
// back all the same, and the error wraps [ErrLockLost] and
// [ErrLeaseExpired]: the holder cannot know whether another call took it
// in the meantime. When an id is not taken (released already, or its lease
// ended and another call gave it back) the error wraps [ErrNotHeld]; an id
// named twice goes back once, and its second naming counts as not taken.
//
// An attempt whose reply was lost or whose connection failed is sent again
// until ctx ends (each repeat answers as the first that ran, and gives
// nothing back twice); when ctx ends first the error is returned, wrapped,
// and the permits may or may not have gone back.
func (s *ExpirableSemaphore) Release(ctx context.Context, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	id, _ := s.h.c.newField(s.h.owner, ":r", "")
	members := permitMembers(ids)
	var held, ended int64
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, cleanupBudget)
		var err error
		held, ended, err = s.h.c.direct.ReleaseExpirable(actx, &s.l, id, tombstoneTTL, members)
		cancel()
		if err == nil {
			break
		}
		if !ambiguous(err) || ctx.Err() != nil || s.h.c.isClosed() {
			return fmt.Errorf("redisync: ExpirableSemaphore %q: release (%d attempts): %w", s.h.name, attempt, err)
		}
		select {
		case <-time.After(min(time.Duration(attempt)*50*time.Millisecond, time.Second)):
		case <-ctx.Done():
		}
	}
	if held+ended > 0 {
		s.h.c.wakeEvery(s.l.Channel) // this process's waiters, without the round trip
	}
	switch {
	case ended > 0:
		return fmt.Errorf("redisync: ExpirableSemaphore %q: %d of %d permits released after their lease ended: %w: %w",
			s.h.name, ended, len(ids), ErrLockLost, ErrLeaseExpired)
	case held < int64(len(ids)):
		return fmt.Errorf("redisync: ExpirableSemaphore %q: %d of %d permits were not taken: %w",
			s.h.name, int64(len(ids))-held, len(ids), ErrNotHeld)
	}
	return nil
}

// Renew sets the lease of the permit id to end lease from now (0: never),
// as Java's updateLeaseTime does. A permit whose lease has ended is not
// renewed: the error wraps [ErrNotHeld]. It panics as Acquire does.
func (s *ExpirableSemaphore) Renew(ctx context.Context, id string, lease time.Duration) error {
	arg := leaseArg(lease)
	m := permitMembers([]string{id})
	ok, err := s.h.c.direct.RenewExpirable(ctx, &s.l, m[0], m[1], arg)
	switch {
	case err != nil:
		return fmt.Errorf("redisync: ExpirableSemaphore %q: renew: %w", s.h.name, err)
	case !ok:
		return fmt.Errorf("redisync: ExpirableSemaphore %q: permit %s: %w", s.h.name, id, ErrNotHeld)
	}
	return nil
}

// Available returns the free permits, after the permits whose lease ended
// are given back (as Java's availablePermits does), or the handle's size
// when the name was never used (the first acquire sets it). Permits that a
// call of this Client that gave up is still giving back are counted free:
// Available waits for them (a quarter of a second at most, or until ctx
// ends), as a later Acquire does.
func (s *ExpirableSemaphore) Available(ctx context.Context) (int64, error) {
	s.h.c.takeBacks.settled(ctx, s.h.name)
	n, err := s.h.c.direct.AvailableExpirable(ctx, &s.l)
	switch {
	case err != nil:
		return 0, fmt.Errorf("redisync: ExpirableSemaphore %q: %w", s.h.name, err)
	case n < 0:
		return s.size, nil
	}
	return n, nil
}
