package scripts

import (
	"context"
	"fmt"
	"strconv"

	"github.com/go-redisync/redisync/internal/layout"
)

// MutexKeys are the names that a Mutex's (and a FencedMutex's) scripts take,
// made once per handle: the lock, its channel, the prefix of its latches, the
// queue, the heartbeats, the run of handovers, the token counter. Each call
// sends them in its script's order, with the hold's latch (see latchKey) for
// the prefix, from an array of its own that does not escape.
type MutexKeys [7]string

// MutexKeysOf returns the names of the keys of the Mutex at l.
func MutexKeysOf(l layout.Mutex) MutexKeys {
	return MutexKeys{l.Key, l.Channel, l.Latch, l.Queue, l.Alive, l.Run, l.Token}
}

// Channel returns the Mutex's release channel.
func (k *MutexKeys) Channel() string { return k[1] }

// AcquireMutex runs mutex_acquire: hold h takes the lock k, or re-enters it.
func (r *Runner) AcquireMutex(ctx context.Context, k *MutexKeys, h Hold) (Reply, error) {
	keys := [...]string{k[0], latchKey(k[2], h.Field, h.LatchKey)}
	args := []string{h.LeaseMS, h.Field, strconv.Itoa(h.Count)}
	return lockReply(r.integer(ctx, Call{Script: MutexAcquire, Keys: keys[:], Args: args}))
}

// WaitMutex runs mutex_wait: the waiting call whose first acquire is hold h
// (h.Field is also its id in the queue) takes the lock k, or keeps its place
// in the queue with a heartbeat of h.HeartbeatMS; a Busy Reply's Place is
// the number a release that hands it the lock publishes.
func (r *Runner) WaitMutex(ctx context.Context, k *MutexKeys, h Hold) (Reply, error) {
	keys := [...]string{k[0], latchKey(k[2], h.Field, h.LatchKey), k[3], k[4]}
	v, err := r.Exec(ctx, Call{Script: MutexWait, Keys: keys[:], Args: []string{h.LeaseMS, h.Field, h.HeartbeatMS}}).AsIntSlice()
	switch {
	case err != nil:
		return Reply{}, err
	case len(v) == 3 && v[0] == 0:
		return Reply{Outcome: Busy, Value: v[1], Place: v[2]}, nil
	case len(v) == 2 && v[0] == 1:
		return Reply{Outcome: Acquired}, nil
	case len(v) == 2 && v[0] == -4:
		return Reply{Outcome: Refused}, nil
	}
	return Reply{}, fmt.Errorf("mutex_wait replied %v", v)
}

// AcquireFenced runs fenced_acquire: as AcquireMutex, and a first acquire
// takes the next fencing token, the Reply's Value.
func (r *Runner) AcquireFenced(ctx context.Context, k *MutexKeys, h Hold) (Reply, error) {
	keys := [...]string{k[0], k[6], latchKey(k[2], h.Field, h.LatchKey)}
	args := []string{h.LeaseMS, h.Field, strconv.Itoa(h.Count)}
	return r.pair(ctx, Call{Script: FencedAcquire, Keys: keys[:], Args: args})
}

// ReleaseMutex runs mutex_release: rel's hold of the lock k leaves holds, or
// releases the lock and hands it to the first live waiting call of the
// queue (Woken has its place number), or wakes one waiter (Redisson's
// message "0") when none is queued; rel.Waiter, if set, leaves the queue.
func (r *Runner) ReleaseMutex(ctx context.Context, k *MutexKeys, rel *Release) (Released, error) {
	var argv [9]string
	r.argv((*[7]string)(argv[:7]), rel)
	argv[6], argv[7], argv[8] = rel.Waiter, HandoverRunMS, flag(rel.Run)
	keys := [...]string{k[0], k[1], latchKey(k[2], rel.Field, rel.LatchKey), k[3], k[4], k[5]}
	return r.queueReleased(ctx, Call{Script: MutexRelease, Keys: keys[:], Args: argv[:]})
}

// HandoverRunMS bounds, in milliseconds, a run of releases of a Mutex that
// hand the lock on to queued waiters: the first release after it leaves the
// lock free, so that waiters outside the queue (Redisson's, a MultiMutex's,
// a FencedMutex's) get their chance.
const HandoverRunMS = "10"

// ForceUnlockMutex runs mutex_force_unlock on the lock key (a Mutex's or an
// RWMutex's): it deletes it, publishes message on channel ("0" wakes one
// waiter, "1" all), and returns the fields it deleted.
func (r *Runner) ForceUnlockMutex(ctx context.Context, key, channel, message string) ([]string, error) {
	return r.fields(ctx, Call{Script: MutexForceUnlock, Keys: []string{key, channel}, Args: []string{r.publish, message}})
}

// SetFence runs fence_set: value is stored at the fence key if token is not
// lower than the highest token seen there. It reports whether it was stored,
// and that highest token.
func (r *Runner) SetFence(ctx context.Context, key string, token uint64, value string) (bool, uint64, error) {
	call := Call{
		Script:    FenceSet,
		Keys:      []string{key},
		Args:      []string{strconv.FormatUint(token, 10), value},
		Retryable: true, // writing the same value with the same token twice is harmless
	}
	v, err := r.Exec(ctx, call).ToArray()
	err = call.explain(err)
	if err == nil && len(v) != 2 {
		err = fmt.Errorf("fence_set replied %v", v)
	}
	var stored int64
	var seen uint64
	if err == nil {
		stored, err = v[0].AsInt64()
	}
	if err == nil {
		seen, err = v[1].AsUint64() // text: a token may be above the largest int64
	}
	if err != nil {
		return false, 0, err
	}
	return stored == 1, seen, nil
}
