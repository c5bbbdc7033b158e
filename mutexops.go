package redisync

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/scripts"
)

// mutexAcquirer makes the acquire attempts of one call of one owner on a
// Mutex. With reentrant set, an owner that holds the lock takes it again.
// After a successful attempt on a FencedMutex, token is the token it was
// granted.
type mutexAcquirer struct {
	m         *Mutex
	owner     uint64
	reentrant bool
	waits     bool // a waiting call (Lock, LockContext), not a single attempt
	token     uint64
	call      holdCall
}

func (a *mutexAcquirer) try(ctx context.Context) (attempt, error) {
	mode := waitFree
	switch {
	case a.reentrant:
		mode = reenter
	case a.waits:
		mode = waitHandoff
	}
	res, t, token, err := a.m.c.tryHold(ctx, a.m.op(a.owner), mode, &a.call, !a.waits)
	if t != nil {
		a.token = uint64(token)
		t.token.Store(a.token)
		a.m.cur.Store(t)
	}
	return res, err
}

// undo gives back what an attempt of unknown outcome may have taken.
func (a *mutexAcquirer) undo(ctx context.Context) { a.m.c.undoHold(ctx, a.m.op(a.owner), &a.call) }

func (a *mutexAcquirer) primitive() string { return a.m.primitive() }

// primitive names m's sort in events.
func (m *Mutex) primitive() string {
	if m.tokenKey != "" {
		return PrimitiveFencedMutex
	}
	return PrimitiveMutex
}

// op describes owner's hold on m. The handle's own owner's is built once.
func (m *Mutex) op(owner uint64) *holdOp {
	if owner == m.owner {
		if op := m.self.Load(); op != nil {
			return op
		}
		op := m.newOp(owner)
		m.self.Store(op)
		return op
	}
	return m.newOp(owner)
}

func (m *Mutex) newOp(owner uint64) *holdOp {
	return &holdOp{
		key:       holdKey{kind: exclusive, name: m.name, owner: owner},
		handoff:   m.tokenKey == "", // every FencedMutex acquisition takes a token from Redis
		cfg:       &m.cfg,
		primitive: m.primitive(),
		channel:   m.channel,
		acquire:   m.runAcquire,
		release:   m.runRelease,
		newLease:  m.newLease,
	}
}

// newLease describes the lease of term t for the scheduler.
func (m *Mutex) newLease(t *term) *lease.Lease {
	l := &t.own
	t.args[0], t.args[1] = t.field, m.leaseMS
	*l = lease.Lease{Key: m.name, Keys: m.keys[:1], Args: t.args[:2], TTL: m.cfg.leaseTTL(), Lost: t}
	if m.cfg.lease == 0 {
		l.Renew = scripts.MutexRenew
	}
	return l
}

// runAcquire runs the acquire script for the hold field, which has count
// holds (0: a first acquire), and returns its outcome: for acquired, the
// fencing token (0 on a plain Mutex); for busy, the holder's PTTL.
func (m *Mutex) runAcquire(ctx context.Context, field string, count int) (outcome int, value int64, err error) {
	args := []string{m.leaseMS, field, strconv.Itoa(count)}
	if m.tokenKey == "" {
		pttl, err := m.c.scripts.Exec(ctx, scripts.Call{Script: scripts.MutexAcquire, Keys: m.keys[3:5], Args: args}).AsInt64()
		switch {
		case rueidis.IsRedisNil(err):
			return acquired, 0, nil
		case err != nil:
			return 0, 0, err
		case pttl == -3:
			return gone, 0, nil
		case pttl == -4:
			return refused, 0, nil
		}
		return busy, pttl, nil
	}
	reply, err := m.c.scripts.Exec(ctx, scripts.Call{Script: scripts.FencedAcquire, Keys: m.keys[3:6], Args: args}).AsIntSlice()
	switch {
	case err != nil:
		return 0, 0, err
	case len(reply) != 2:
		return 0, 0, fmt.Errorf("fenced acquire replied %v", reply)
	case reply[0] == 1:
		return acquired, reply[1], nil
	case reply[0] == -3:
		return gone, 0, nil
	case reply[0] == -4:
		return refused, 0, nil
	}
	return busy, reply[1], nil
}

// unlock releases one hold of owner.
func (m *Mutex) unlock(ctx context.Context, owner uint64) error {
	return m.c.releaseHold(ctx, m.op(owner))
}

// runRelease runs the release script once (see holdOp.release).
func (m *Mutex) runRelease(ctx context.Context, r release) (int64, error) {
	var argv [6]string
	return m.c.runRelease(ctx, scripts.Call{Script: scripts.MutexRelease, Keys: m.keys[:3], Args: r.argv(&argv, m.c.publish)})
}

// argv fills a with the ARGV of the release scripts of the Redisson layouts,
// and returns it: field, from, to, the publish command, the latch lifetime,
// and the undo flag. (The caller's array spares an allocation per release.)
func (r release) argv(a *[6]string, publish string) []string {
	undo := "0"
	if r.undo {
		undo = "1"
	}
	latch := r.latch
	if latch == "" {
		latch = "0"
	}
	*a = [6]string{r.field, strconv.Itoa(r.from), strconv.Itoa(r.to), publish, latch, undo}
	return a[:]
}

// runRelease runs a release call once; a lost reply may be repeated by
// rueidis (a release acts on one hold's identity, and its final form leaves a
// latch, so a repeat answers as the first did). It returns 1 released, 0
// still held, and -1 for a nil reply: the hold was not there.
func (c *Client) runRelease(ctx context.Context, call scripts.Call) (int64, error) {
	call.Retryable = true
	n, err := c.scripts.Exec(ctx, call).AsInt64()
	if rueidis.IsRedisNil(err) {
		return -1, nil
	}
	return n, err
}

// ambiguous reports whether a failed call may nevertheless have run: a
// transport failure or the end of the caller's context, as opposed to an
// error reply from the server or a verdict of redisync's own.
func ambiguous(err error) bool {
	var reply *rueidis.RedisError
	return !errors.As(err, &reply) && !verdict(err)
}

// verdict reports whether err is redisync's own final answer (the hold was
// lost, the Client is closed, an upgrade would deadlock), which no retry can
// change.
func verdict(err error) bool {
	return errors.Is(err, ErrLockLost) || errors.Is(err, ErrClosed) || errors.Is(err, ErrUpgrade)
}
