package redisync

import (
	"context"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/state"
)

// The administration that every primitive offers (IsLocked, TTL, HoldCount,
// ForceUnlock), on the lock's hash; a Semaphore reads its holders instead.

// IsLocked reports whether anyone holds the lock (an RWMutex: for reading
// or writing).
func (h *handle) IsLocked(ctx context.Context) (bool, error) {
	n, err := h.c.rc.Do(ctx, h.c.rc.B().Exists().Key(h.key).Build()).AsInt64()
	if err != nil {
		return false, lockError(h.primitive, h.name, err)
	}
	return n == 1, nil
}

// TTL returns how long the lock will last unless renewed: 0 when nobody holds
// it, and a negative duration when its key has no expiry (set outside
// redisync).
func (h *handle) TTL(ctx context.Context) (time.Duration, error) {
	ms, err := state.PTTL(ctx, h.c.rc, h.key)
	switch {
	case err != nil:
		return 0, lockError(h.primitive, h.name, err)
	case ms < 0:
		return -1, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// holdCount returns the count Redis records for the current hold of the
// owner in ctx (the handle's own owner if ctx has none) of kind: 0 when
// there is no such hold through this Client.
func (h *handle) holdCount(ctx context.Context, kind holdKind) (int, error) {
	if h.c.isClosed() { // the count may be answered without Redis: as the gate would
		return 0, lockError(h.primitive, h.name, ErrClosed)
	}
	owner, _ := ownerOf(ctx, h.owner)
	count, field := h.c.holds.current(holdKey{kind: kind, name: h.key, owner: owner})
	if field == "" {
		return 0, nil
	}
	if h.c.quorum != nil {
		return int(count), nil // recorded on every server: the count this Client keeps
	}
	n, err := h.c.rc.Do(ctx, h.c.rc.B().Hget().Key(h.key).Field(field).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return 0, nil
	}
	if err != nil {
		return 0, lockError(h.primitive, h.name, err)
	}
	return int(n), nil
}

// forceUnlockHash deletes the hash lock at h.key whoever holds it, publishes
// message on channel and wakes this process's waiters there, and reports
// whether it was locked (see forceUnlocked).
func (h *handle) forceUnlockHash(ctx context.Context, channel, message string) (bool, error) {
	fields, err := h.c.direct.ForceUnlockMutex(ctx, h.key, channel, message)
	ok, err := h.forceUnlocked(ctx, fields, err)
	if ok {
		h.c.wakeEvery(channel)
	}
	return ok, err
}

// forceUnlocked files the outcome of a force unlock under ctx, which took
// away fields or failed with err: it ends, as force-unlocked, this Client's
// holds among fields, tells the other Clients that held some of them (see
// engine.tell), and reports whether there were any.
func (h *handle) forceUnlocked(ctx context.Context, fields []string, err error) (bool, error) {
	if err != nil {
		return false, lockError(h.primitive, h.name, err)
	}
	if len(fields) > 0 {
		h.c.endForced(fields)
		h.c.tell(ctx, fields)
	}
	return len(fields) > 0, nil
}
