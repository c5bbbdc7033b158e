package redisync

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/scripts"
)

// Unlock retries and latches. A release whose reply is lost is sent again with
// the same request id for up to releaseBudget; its latch outlives that window
// so the retry still finds it.
const (
	releaseBudget = 3 * time.Second
	latchTTL      = "5000" // milliseconds
	cleanupBudget = 2 * time.Second
)

// errHoldGone is the cause of a loss found by an acquire or a release.
var errHoldGone = errors.New("the hold was gone from Redis")

// mutexAcquirer makes the acquire attempts of one owner on a Mutex. With
// reentrant set, an owner that holds the lock takes it again. After a
// successful attempt on a FencedMutex, token is the token it was granted.
type mutexAcquirer struct {
	m         *Mutex
	owner     uint64
	reentrant bool
	token     uint64
}

// Outcomes of an acquire script.
const (
	acquired = iota
	busy     // value is the holder's PTTL in milliseconds
	gone     // a re-entry found the owner's hold lost
)

func (a *mutexAcquirer) try(ctx context.Context) (attempt, error) {
	m, c := a.m, a.m.c
	h := c.ref(holdKey{name: m.name, owner: a.owner}, true)
	defer c.unref(h)
	h.op.Lock()
	defer h.op.Unlock()
	if h.count > 0 {
		if !a.reentrant {
			return attempt{free: h.free}, nil
		}
		if ended, err := h.term.Load().result(); ended {
			return attempt{}, err
		}
	}
	field := c.field(a.owner)
	sent := time.Now()
	outcome, value, err := m.runAcquire(ctx, field, h.count+1)
	switch {
	case err != nil:
		return attempt{}, lockError(m.name, err)
	case outcome == gone:
		t := h.term.Load()
		c.leases.Remove(t.lease)
		c.lost(t, m.name, &m.cfg, errHoldGone)
		_, err := t.result()
		return attempt{}, err
	case outcome == busy:
		return attempt{wait: time.Duration(value) * time.Millisecond}, nil
	}
	var t *term
	if h.count == 0 {
		t = newTerm()
		t.lease = m.newLease(t, field)
		c.begin(h, t, sent)
	} else {
		t = h.term.Load()
		h.count++
		c.leases.Touch(t.lease, sent)
	}
	a.token = uint64(value)
	t.token.Store(a.token)
	m.cur.Store(t)
	if c.isClosed() {
		// Close may have ended holds before this one was recorded.
		t.end(lockError(m.name, ErrClosed))
	}
	return attempt{acquired: true}, nil
}

// runAcquire runs the acquire script that sets field's hold count to count,
// and returns its outcome: for acquired, the fencing token (0 on a plain
// Mutex); for busy, the holder's PTTL.
func (m *Mutex) runAcquire(ctx context.Context, field string, count int) (outcome int, value int64, err error) {
	args := []string{m.leaseMS, field, strconv.Itoa(count)}
	if m.tokenKey == "" {
		pttl, err := m.c.scripts.Exec(ctx, scripts.Call{
			Script: scripts.MutexAcquire, Keys: []string{m.name}, Args: args,
		}).AsInt64()
		switch {
		case rueidis.IsRedisNil(err):
			return acquired, 0, nil
		case err != nil:
			return 0, 0, err
		case pttl == -3:
			return gone, 0, nil
		}
		return busy, pttl, nil
	}
	reply, err := m.c.scripts.Exec(ctx, scripts.Call{
		Script: scripts.FencedAcquire, Keys: []string{m.name, m.tokenKey}, Args: args,
	}).AsIntSlice()
	switch {
	case err != nil:
		return 0, 0, err
	case len(reply) != 2:
		return 0, 0, fmt.Errorf("fenced acquire replied %v", reply)
	case reply[0] == 1:
		return acquired, reply[1], nil
	case reply[0] == -3:
		return gone, 0, nil
	}
	return busy, reply[1], nil
}

// undo sets the owner's hold count back to what it was before an attempt
// whose outcome is unknown, releasing the lock if that attempt took it.
func (a *mutexAcquirer) undo(ctx context.Context) {
	c := a.m.c
	h := c.ref(holdKey{name: a.m.name, owner: a.owner}, true)
	defer c.unref(h)
	h.op.Lock()
	defer h.op.Unlock()
	if _, err := a.m.release(context.WithoutCancel(ctx), c.field(a.owner), h.count, cleanupBudget); err != nil {
		a.m.cfg.logger.Warn("redisync: could not undo an acquire of unknown outcome; a hold it took expires with its lease",
			"name", a.m.name, "error", err)
	}
}

// newLease describes the lease of term t, a new hold by field, for the scheduler.
func (m *Mutex) newLease(t *term, field string) *lease.Lease {
	l := &lease.Lease{
		Key:  m.name,
		Keys: []string{m.name},
		Args: []string{field, m.leaseMS},
		TTL:  m.cfg.leaseTTL(),
	}
	if m.cfg.lease == 0 {
		l.Renew = scripts.MutexRenew
	}
	l.Lost = func(cause error) { m.c.lost(t, m.name, &m.cfg, cause) }
	return l
}

// unlock releases one hold of owner.
func (m *Mutex) unlock(ctx context.Context, owner uint64) error {
	c := m.c
	h := c.ref(holdKey{name: m.name, owner: owner}, false)
	if h == nil {
		return lockError(m.name, ErrNotHeld)
	}
	defer c.unref(h)
	h.op.Lock()
	defer h.op.Unlock()
	if h.count == 0 {
		return lockError(m.name, ErrNotHeld)
	}
	t := h.term.Load()
	if ended, err := t.result(); ended {
		// Lost or closed earlier: the owner's release acknowledges it.
		if h.count--; h.count == 0 {
			c.finish(h)
		}
		return err
	}
	field := c.field(owner)
	if h.count > 1 {
		h.count--
		released, err := m.release(ctx, field, h.count, releaseBudget)
		if err == nil && released < 0 {
			c.leases.Remove(t.lease)
			c.lost(t, m.name, &m.cfg, errHoldGone)
			_, err = t.result()
		}
		return err
	}
	var err error
	if !c.leases.Remove(t.lease) {
		// The scheduler has just found it lost; its report is on the way.
		c.lost(t, m.name, &m.cfg, lease.ErrExpired)
	} else if released, rerr := m.release(ctx, field, 0, releaseBudget); rerr != nil {
		t.end(rerr)
	} else if released < 0 {
		c.lost(t, m.name, &m.cfg, errHoldGone)
	} else {
		t.end(nil)
	}
	_, err = t.result()
	c.finish(h)
	c.notify.WakeOne(m.channel)
	return err
}

// release sets field's hold count to count (0 releases the lock), retrying a
// lost reply with the same request id for up to budget. It returns 1 when the
// lock was released, 0 when still held, and -1 when field did not hold it.
func (m *Mutex) release(ctx context.Context, field string, count int, budget time.Duration) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	latch := m.latch + ":" + strconv.FormatUint(rand.Uint64(), 16)
	n, err := m.c.scripts.Exec(ctx, scripts.Call{
		Script:    scripts.MutexRelease,
		Keys:      []string{m.name, m.channel, latch},
		Args:      []string{field, strconv.Itoa(count), m.c.publish, latchTTL},
		Retryable: true, // idempotent: the count is set and the final release latched
	}).AsInt64()
	switch {
	case rueidis.IsRedisNil(err):
		return -1, nil
	case err != nil:
		return 0, lockError(m.name, err)
	}
	return n, nil
}

// ambiguous reports whether a failed call may nevertheless have run: a
// transport failure or the end of the caller's context, as opposed to an
// error reply from the server or a verdict of redisync's own.
func ambiguous(err error) bool {
	var reply *rueidis.RedisError
	return !errors.As(err, &reply) && !errors.Is(err, ErrLockLost) && !errors.Is(err, ErrClosed)
}
