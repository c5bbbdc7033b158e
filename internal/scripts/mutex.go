package scripts

import (
	"context"
	"fmt"
	"strconv"

	"github.com/go-redisync/redisync/internal/layout"
)

// MutexKeys are the KEYS of a Mutex's (and a FencedMutex's) scripts, made
// once per handle so that a call allocates none: the release's [0:6], the
// acquire's [6:8], a waiting acquire's [6:10], a FencedMutex acquire's [10:13].
type MutexKeys [13]string

// MutexKeysOf returns the KEYS of the scripts of the Mutex at l.
func MutexKeysOf(l layout.Mutex) MutexKeys {
	return MutexKeys{l.Key, l.Channel, l.Latch, l.Queue, l.Alive, l.Run, l.Key, l.Latch, l.Queue, l.Alive, l.Key, l.Token, l.Latch}
}

// Channel returns the Mutex's release channel.
func (k *MutexKeys) Channel() string { return k[1] }

// AcquireMutex runs mutex_acquire: hold h takes the lock k, or re-enters it.
func (r *Runner) AcquireMutex(ctx context.Context, k *MutexKeys, h Hold) (Reply, error) {
	args := []string{h.LeaseMS, h.Field, strconv.Itoa(h.Count)}
	return lockReply(r.integer(ctx, Call{Script: MutexAcquire, Keys: k[6:8], Args: args}))
}

// WaitMutex runs mutex_wait: the waiting call whose first acquire is hold h
// (h.Field is also its id in the queue) takes the lock k, or keeps its place
// in the queue with a heartbeat of h.HeartbeatMS; a Busy Reply's Place is
// the number a release that hands it the lock publishes.
func (r *Runner) WaitMutex(ctx context.Context, k *MutexKeys, h Hold) (Reply, error) {
	v, err := r.Exec(ctx, Call{Script: MutexWait, Keys: k[6:10], Args: []string{h.LeaseMS, h.Field, h.HeartbeatMS}}).AsIntSlice()
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
	args := []string{h.LeaseMS, h.Field, strconv.Itoa(h.Count)}
	return r.pair(ctx, Call{Script: FencedAcquire, Keys: k[10:13], Args: args})
}

// ReleaseMutex runs mutex_release: rel's hold of the lock k leaves holds, or
// releases the lock and hands it to the first live waiting call of the
// queue (Woken has its place number), or wakes one waiter (Redisson's
// message "0") when none is queued; rel.Waiter, if set, leaves the queue.
func (r *Runner) ReleaseMutex(ctx context.Context, k *MutexKeys, rel *Release) (Released, error) {
	var argv [9]string
	r.argv((*[7]string)(argv[:7]), rel)
	argv[6], argv[7], argv[8] = rel.Waiter, HandoverRunMS, flag(rel.Run)
	return r.queueReleased(ctx, Call{Script: MutexRelease, Keys: k[:6], Args: argv[:]})
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
		seen, err = v[1].AsUint64()
	}
	if err != nil {
		return false, 0, err
	}
	return stored == 1, seen, nil
}
