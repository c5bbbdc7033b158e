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

// mutexAcquirer makes the acquire attempts of one owner on a Mutex. With
// reentrant set, an owner that holds the lock takes it again. After a
// successful attempt on a FencedMutex, token is the token it was granted.
type mutexAcquirer struct {
	m         *Mutex
	owner     uint64
	reentrant bool
	waits     bool // a waiting call (Lock, LockContext), not a single attempt
	token     uint64
}

func (a *mutexAcquirer) try(ctx context.Context) (attempt, error) {
	mode := waitFree
	switch {
	case a.reentrant:
		mode = reenter
	case a.waits:
		mode = waitHandoff
	}
	res, t, token, err := a.m.c.tryHold(ctx, a.m.op(a.owner), mode)
	if t != nil {
		a.token = uint64(token)
		t.token.Store(a.token)
		a.m.cur.Store(t)
	}
	return res, err
}

// undo sets the owner's hold count back to what it was before an attempt
// whose outcome is unknown, releasing the lock if that attempt took it.
func (a *mutexAcquirer) undo(ctx context.Context) { a.m.c.undoHold(ctx, a.m.op(a.owner)) }

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
	field := m.c.field(owner)
	// The arguments of the common calls, made once per owner and shared by
	// its calls and its leases (nobody writes them).
	lockKey := []string{m.name}
	acquireKeys := lockKey
	if m.tokenKey != "" {
		acquireKeys = []string{m.name, m.tokenKey}
	}
	firstAcquire := []string{m.leaseMS, field, "1"}
	finalRelease := []string{field, "0", m.c.publish, latchTTL}
	renew := []string{field, m.leaseMS}
	return &holdOp{
		key:       holdKey{kind: exclusive, name: m.name, owner: owner},
		handoff:   m.tokenKey == "", // every FencedMutex acquisition takes a token from Redis
		cfg:       &m.cfg,
		primitive: m.primitive(),
		channel:   m.channel,
		acquire: func(ctx context.Context, count int) (int, int64, error) {
			args := firstAcquire
			if count != 1 {
				args = []string{m.leaseMS, field, strconv.Itoa(count)}
			}
			return m.runAcquire(ctx, acquireKeys, args)
		},
		release: func(ctx context.Context, count int, budget time.Duration) (int64, error) {
			args := finalRelease
			if count != 0 {
				args = []string{field, strconv.Itoa(count), m.c.publish, latchTTL}
			}
			return m.release(ctx, args, budget)
		},
		newLease: func(t *term) *lease.Lease {
			l := &t.own
			*l = lease.Lease{Key: m.name, Keys: lockKey, Args: renew, TTL: m.cfg.leaseTTL(), Lost: t}
			if m.cfg.lease == 0 {
				l.Renew = scripts.MutexRenew
			}
			return l
		},
	}
}

// runAcquire runs the acquire script, which sets the owner's hold count, and
// returns its outcome: for acquired, the fencing token (0 on a plain Mutex);
// for busy, the holder's PTTL.
func (m *Mutex) runAcquire(ctx context.Context, keys, args []string) (outcome int, value int64, err error) {
	if m.tokenKey == "" {
		pttl, err := m.c.scripts.Exec(ctx, scripts.Call{Script: scripts.MutexAcquire, Keys: keys, Args: args}).AsInt64()
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
	reply, err := m.c.scripts.Exec(ctx, scripts.Call{Script: scripts.FencedAcquire, Keys: keys, Args: args}).AsIntSlice()
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

// unlock releases one hold of owner.
func (m *Mutex) unlock(ctx context.Context, owner uint64) error {
	return m.c.releaseHold(ctx, m.op(owner))
}

// release runs the release script with args (the owner's field and the
// hold count to leave: 0 releases the lock). See Client.release.
func (m *Mutex) release(ctx context.Context, args []string, budget time.Duration) (int64, error) {
	return m.c.release(ctx, m.name, budget, scripts.Call{
		Script: scripts.MutexRelease,
		Keys:   []string{m.name, m.channel, newLatch(m.latch)},
		Args:   args,
	})
}

// release runs a release script of the lock called name, retrying a lost
// reply with the same request id (the latch in its keys) for up to budget:
// the scripts set the count and latch the final release, so a repeat answers
// as the first attempt did. It returns 1 when the owner's last hold is gone,
// 0 when it still holds, and -1 when it held nothing.
func (c *Client) release(ctx context.Context, name string, budget time.Duration, call scripts.Call) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	call.Retryable = true
	n, err := c.scripts.Exec(ctx, call).AsInt64()
	switch {
	case rueidis.IsRedisNil(err):
		return -1, nil
	case err != nil:
		return 0, lockError(name, err)
	}
	return n, nil
}

// newLatch names a release's latch key: prefix, ":" and a random request id.
// It is built in one allocation: every release makes one.
func newLatch(prefix string) string {
	var buf [128]byte
	b := append(buf[:0], prefix...)
	b = append(b, ':')
	return string(strconv.AppendUint(b, rand.Uint64(), 16))
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
