package redisync

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/quorum"
)

// Errors returned by the primitives. Errors about one lock wrap these with the
// lock's name, so test them with [errors.Is].
var (
	// ErrNotHeld is returned when a caller releases a lock it does not hold.
	ErrNotHeld = errors.New("redisync: lock not held")
	// ErrLockLost reports that a hold ended without being released: its lease
	// ran out, or Redis no longer had it (expired, deleted, or force-unlocked).
	ErrLockLost = errors.New("redisync: lock lost")
	// ErrClosed is returned by calls on a closed [Client], and ends holds that
	// were still held when it was closed.
	ErrClosed = errors.New("redisync: client closed")
	// ErrUpgrade is returned when an owner that holds an [RWMutex]'s read lock
	// asks for its write lock: it would wait for its own read hold forever.
	ErrUpgrade = errors.New("redisync: read lock held: upgrading to the write lock would deadlock")
	// ErrStaleToken is returned by [Fence.Set] when the writer's fencing
	// token is lower than one the resource has already accepted: the
	// writer's lock was lost and someone else has held it since.
	ErrStaleToken = errors.New("redisync: stale fencing token")
	// ErrNegativeCounter is returned by [WaitGroup.Add] when the change would
	// take the counter below zero; the counter is left as it was.
	ErrNegativeCounter = errors.New("redisync: negative WaitGroup counter")
	// ErrNotReplicated is returned by an acquisition that fewer replicas
	// acknowledged in time than [WithSyncReplicas] asks; it was undone.
	ErrNotReplicated = errors.New("redisync: acquisition not acknowledged by enough replicas")
	// ErrNoQuorum is returned when fewer than a majority of a quorum's
	// deployments (see [NewQuorum]) answered; the error names those that
	// did not.
	ErrNoQuorum = quorum.ErrNoQuorum
)

// The causes of a loss. An error wrapping [ErrLockLost] also wraps one of
// these, so that errors.Is tells why the hold ended.
var (
	// ErrLeaseExpired: the lease ran out without a renewal that Redis
	// confirmed (Redis unreachable, the process paused, or a fixed lease over).
	ErrLeaseExpired = errors.New("lease expired")
	// ErrHoldGone: Redis no longer had the hold (its key expired, was
	// deleted or rewritten by someone else, or the server lost it).
	ErrHoldGone = errors.New("hold gone from Redis")
	// ErrForceUnlocked: ForceUnlock through the same Client deleted the hold.
	ErrForceUnlocked = errors.New("force-unlocked")
)

// errSizeMismatch: a Semaphore handle's size differs from the one in Redis.
var errSizeMismatch = errors.New("size differs from the size recorded in Redis")

// errStaleHold: an acquire's hold could not be returned: its lease may have
// run out before the call could return it (see engine.current).
var errStaleHold = errors.New("the hold came when its lease could have run out: its outcome is unknown")

// errRefused: an acquire found its own call's latch (a late copy of an attempt).
var errRefused = errors.New("the acquire was refused: its call had been undone")

// A namedError is an error about one primitive: its message names the
// primitive's sort and name, with the package's prefix once (the errors it
// wraps have theirs: `redisync: Mutex "order:7": lock lost: lease expired`).
type namedError struct {
	primitive Primitive
	name      string
	err       error
}

func (e *namedError) Error() string {
	return "redisync: " + e.primitive.sort() + " " + strconv.Quote(e.name) + ": " +
		strings.TrimPrefix(e.err.Error(), "redisync: ")
}

func (e *namedError) Unwrap() error { return e.err }

// lockError wraps err with the sort and name of the primitive it is about.
func lockError(primitive Primitive, name string, err error) error {
	return &namedError{primitive: primitive, name: name, err: err}
}

// lostError reports the loss of the hold on name, for the given cause.
func lostError(primitive Primitive, name string, cause error) error {
	return lockError(primitive, name, fmt.Errorf("%w: %w", ErrLockLost, cause))
}

// unsent reports whether err proves that the attempt it answers never left
// the process: rueidis could not connect (its dial failed: refused, no
// route), so it wrote the command nowhere, and nothing is to be taken back.
// It holds for the calls that rueidis does not resend by itself, which
// every acquire is: a resent one may have been written before the dial of
// its resend failed.
func unsent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// ambiguous reports whether a failed call may nevertheless have run: a
// transport failure or the end of the caller's context, as opposed to an
// error reply from the server or a verdict of redisync's own.
func ambiguous(err error) bool {
	var reply *rueidis.RedisError
	return !errors.As(err, &reply) && !verdict(err) && !errors.Is(err, ErrNotReplicated)
}

// verdict reports whether err is redisync's own final answer (the hold was
// lost, the Client is closed, an upgrade would deadlock), which no retry can
// change.
func verdict(err error) bool {
	for _, final := range finalErrors {
		if errors.Is(err, final) {
			return true
		}
	}
	return false
}

// finalErrors are the verdicts: the errors no retry can change.
var finalErrors = [...]error{ErrLockLost, ErrClosed, ErrUpgrade, errSizeMismatch}

// placeLost is the Cause of the EventQueued of a call that queued again,
// at the end of the queue: its heartbeat lapsed for cause, or, cause nil,
// its own attempt found its place gone.
func placeLost(cause error) error {
	const gone = "redisync: queued again: Redis no longer had the waiter's place (reaped after its heartbeat deadline, or deleted)"
	switch {
	case cause == nil: // the call's own attempt found it gone
		return errors.New(gone)
	case errors.Is(cause, lease.ErrNotHeld):
		return fmt.Errorf(gone+": %w", cause)
	}
	return fmt.Errorf("redisync: queued again: the waiter's heartbeat deadline passed without a confirmed renewal (the process or its connection stalled): %w", cause)
}
