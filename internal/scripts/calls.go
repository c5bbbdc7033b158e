package scripts

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// The typed calls: one method of Runner per script a primitive sends, with
// the script's KEYS and ARGV as named arguments and its reply decoded. The
// batch renewal scripts are not among them: the lease scheduler sends those
// (see lease.Lease).

// An Outcome is an acquire script's verdict on one hold.
type Outcome int

// Outcomes of an acquire script.
const (
	Acquired Outcome = iota // the hold has its new count
	Busy                    // the lock is taken, or the caller queued: wait
	Gone                    // a re-entry found its hold gone (lost)
	Refused                 // a first acquire found its call's latch: a late copy
	Mismatch                // a Semaphore's handle has another size than Redis
	Complete                // nothing to hold: what the call waits for has happened (a Once's function succeeded)
)

// A Reply is an acquire script's outcome and its value: for Acquired a value
// to pass on (a fencing token), for Busy how long to wait in milliseconds,
// for Mismatch the size Redis has. A Busy Reply's Channel, when set, is
// where to wait instead of the lock's own channel (a MultiMutex waits on the
// channel of the name that is taken). A Busy Reply's Place, when set, is
// the waiting call's place number in a Mutex's queue (see WaitMutex). A
// Busy Reply's Fresh says that the waiter joined its queue with this call,
// at its end, rather than kept a place (FairMutex, Semaphore).
type Reply struct {
	Outcome Outcome
	Value   int64
	// Within, for Acquired, is how long from when the acquire was sent the
	// hold lasts at least, when that is less than its lease (a quorum's
	// validity); 0 for the lease.
	Within  time.Duration
	Channel string
	Place   int64
	Fresh   bool
	// Spent says that the attempt's field was latched where it was asked
	// (a quorum's first acquire that fell short was undone so): the call's
	// next attempt must take a new one.
	Spent bool
}

// A Hold is what an acquire script is asked to do for one hold.
type Hold struct {
	Field   string // the hold's identity (a Semaphore's holder id)
	Count   int    // holds (permits) before the call: 0 for a first acquire
	LeaseMS string // the lease in milliseconds
	// LatchKey, when set, is the hold's latch key (see latchKey): the
	// caller made the field as its tail, and the call sends it instead of
	// making the name anew.
	LatchKey string
	// Waiter is the queue ticket of a waiting call ("" to try without
	// queueing), HeartbeatMS its heartbeat timeout; for FairMutex and
	// Semaphore (a Mutex's waiting call queues under its Field).
	Waiter, HeartbeatMS string
}

// A Release is what a release script is asked to do for one hold: its count
// goes from From to To (0 ends the hold). The final release leaves the hold's
// latch for Latch milliseconds ("" for none); Undo leaves it even when the
// hold is not there (the undo of an acquire of unknown outcome). Waiter, if
// set, is a queued waiter leaving (FairMutex, Semaphore, Mutex).
type Release struct {
	Field    string
	From, To int
	Latch    string
	Undo     bool
	Waiter   string
	// LatchKey, when set, is the hold's latch key, as Hold's.
	LatchKey string
	// Run marks a hold that came through a Mutex's queue in Redis (handed
	// by a release, or taken by a queued call): it may be part of a run of
	// handovers, which its release ends when it finds nobody queued.
	Run bool
}

// A Released is a release script's outcome: Status 1 when the hold is gone
// by this release (or a repeat of it), 0 when it is still held, -1 when it
// was not there (-4: a stale call of a Semaphore); Woken names the queued
// waiters the release woke.
type Released struct {
	Status int64
	Woken  []string
}

// argv returns the ARGV that the release scripts of the hash layouts share:
// field, from, to, the publish command, the latch's lifetime, the undo flag.
// (The caller's array spares an allocation per release.)
func (r *Runner) argv(a *[7]string, rel *Release) []string {
	*a = [7]string{rel.Field, strconv.Itoa(rel.From), strconv.Itoa(rel.To), r.publish, ms(rel.Latch), flag(rel.Undo)}
	return a[:6]
}

// latchKey returns the latch key of the hold field under the lock's latch
// prefix, prefix + ":" + field: made itself when it is that name. A hold's
// latch is a key of every call that may take or end the hold, so the
// engine makes the field as the tail of its latch key (see Hold.LatchKey):
// one allocation for both, where each call would make one more.
func latchKey(prefix, field, made string) string {
	if len(made) == len(prefix)+1+len(field) && strings.HasPrefix(made, prefix) && made[len(prefix)] == ':' &&
		strings.HasSuffix(made, field) {
		return made
	}
	return prefix + ":" + field
}

// lockReply decodes the reply of an acquire script that answers nil when it
// acquired, -3 gone, -4 refused, -5 complete, and otherwise how long to wait.
func lockReply(n int64, err error) (Reply, error) {
	switch {
	case rueidis.IsRedisNil(err):
		return Reply{Outcome: Acquired}, nil
	case err != nil:
		return Reply{}, err
	case n == -3:
		return Reply{Outcome: Gone}, nil
	case n == -4:
		return Reply{Outcome: Refused}, nil
	case n == -5:
		return Reply{Outcome: Complete}, nil
	}
	return Reply{Outcome: Busy, Value: n}, nil
}

// pair runs call, whose reply is {status, value} or, from a queued waiter,
// {0, value, fresh}: status 1 acquired with value, -3 gone, -4 refused, -2 a
// Semaphore's size mismatch (value is the size recorded), otherwise busy for
// value milliseconds (fresh 1: the waiter joined the queue now).
func (r *Runner) pair(ctx context.Context, call Call) (Reply, error) {
	v, err := r.ints(ctx, call, 3)
	switch {
	case err != nil:
		return Reply{}, err
	case v[0] == 1:
		return Reply{Outcome: Acquired, Value: v[1]}, nil
	case v[0] == -2:
		return Reply{Outcome: Mismatch, Value: v[1]}, nil
	case v[0] < 0:
		return lockReply(v[0], nil)
	}
	return Reply{Outcome: Busy, Value: v[1], Fresh: len(v) == 3 && v[2] == 1}, nil
}

// twoInts runs call, whose reply is two integers.
func (r *Runner) twoInts(ctx context.Context, call Call) (int64, int64, error) {
	v, err := r.ints(ctx, call, 2)
	if err != nil {
		return 0, 0, err
	}
	return v[0], v[1], nil
}

// ints runs call, whose reply is two to most integers.
func (r *Runner) ints(ctx context.Context, call Call, most int) ([]int64, error) {
	v, err := r.Exec(ctx, call).AsIntSlice()
	err = call.explain(err)
	if err == nil && (len(v) < 2 || len(v) > most) {
		err = fmt.Errorf("%s replied %v", call.Script.Name, v)
	}
	return v, err
}

// released runs a release call, retryable (a release acts on one hold's
// identity and its final form leaves a latch, so a repeat answers as the
// first did), whose reply is 1, 0 or nil (-1: the hold was not there).
func (r *Runner) released(ctx context.Context, call Call) (Released, error) {
	call.Retryable = true
	return releasedOf(call, r.Exec(ctx, call))
}

// releasedOf decodes res, the reply of the release call: see released.
func releasedOf(call Call, res rueidis.RedisResult) (Released, error) {
	n, err := res.AsInt64()
	if rueidis.IsRedisNil(err) {
		return Released{Status: -1}, nil
	}
	return Released{Status: n}, call.explain(err)
}

// queueReleased runs a retryable release call whose reply is {status, id...}
// (ids of the waiters it woke, "" for none).
func (r *Runner) queueReleased(ctx context.Context, call Call) (Released, error) {
	call.Retryable = true
	rep, err := r.Exec(ctx, call).ToArray()
	err = call.explain(err)
	if err == nil && len(rep) == 0 {
		err = errors.New(call.Script.Name + " replied nothing")
	}
	if err != nil {
		return Released{}, err
	}
	var out Released
	if out.Status, err = rep[0].AsInt64(); err != nil {
		return out, err
	}
	for _, w := range rep[1:] {
		if id, err := w.ToString(); err == nil && id != "" {
			out.Woken = append(out.Woken, id)
		}
	}
	return out, nil
}

// fields runs a retryable force unlock, which replies the fields it deleted.
func (r *Runner) fields(ctx context.Context, call Call) ([]string, error) {
	call.Retryable = true // deleting twice deletes once; waiters may be woken twice
	fields, err := r.Exec(ctx, call).AsStrSlice()
	return fields, call.explain(err)
}

// integer runs call, whose reply is an integer or nil.
func (r *Runner) integer(ctx context.Context, call Call) (int64, error) {
	n, err := r.Exec(ctx, call).AsInt64()
	return n, call.explain(err)
}
