package scripts

import (
	"context"
	"fmt"
	"strconv"

	"github.com/go-redisync/redisync/internal/layout"
)

// MutexKeys are the KEYS of a Mutex's (and a FencedMutex's) scripts, made
// once per handle so that a call allocates none: the release's [0:3], the
// acquire's [3:5], a FencedMutex acquire's [5:8].
type MutexKeys [8]string

// MutexKeysOf returns the KEYS of the scripts of the Mutex at l.
func MutexKeysOf(l layout.Mutex) MutexKeys {
	return MutexKeys{l.Key, l.Channel, l.Latch, l.Key, l.Latch, l.Key, l.Token, l.Latch}
}

// Channel returns the Mutex's release channel.
func (k *MutexKeys) Channel() string { return k[1] }

// AcquireMutex runs mutex_acquire: hold h takes the lock k, or re-enters it.
func (r *Runner) AcquireMutex(ctx context.Context, k *MutexKeys, h Hold) (Reply, error) {
	args := []string{h.LeaseMS, h.Field, strconv.Itoa(h.Count)}
	return lockReply(r.integer(ctx, Call{Script: MutexAcquire, Keys: k[3:5], Args: args}))
}

// AcquireFenced runs fenced_acquire: as AcquireMutex, and a first acquire
// takes the next fencing token, the Reply's Value.
func (r *Runner) AcquireFenced(ctx context.Context, k *MutexKeys, h Hold) (Reply, error) {
	args := []string{h.LeaseMS, h.Field, strconv.Itoa(h.Count)}
	return r.pair(ctx, Call{Script: FencedAcquire, Keys: k[5:8], Args: args})
}

// ReleaseMutex runs mutex_release: rel's hold of the lock k leaves holds, or
// releases the lock and wakes one waiter (Redisson's message "0").
func (r *Runner) ReleaseMutex(ctx context.Context, k *MutexKeys, rel *Release) (Released, error) {
	var argv [7]string
	return r.released(ctx, Call{Script: MutexRelease, Keys: k[:3], Args: r.argv(&argv, rel)})
}

// ForceUnlockMutex runs mutex_force_unlock on the lock key (a Mutex's or an
// RWMutex's): it deletes it, publishes message on channel ("0" wakes one
// waiter, "1" all), and returns the fields it deleted.
func (r *Runner) ForceUnlockMutex(ctx context.Context, key, channel, message string) ([]string, error) {
	return r.fields(ctx, Call{Script: MutexForceUnlock, Keys: []string{key, channel}, Args: []string{r.publish, message}})
}

// SetFence runs fence_set: value is stored at the fence key if token is not
// lower than the highest token seen there. It reports whether it was stored,
// and that highest token.
func (r *Runner) SetFence(ctx context.Context, key string, token uint64, value string) (bool, int64, error) {
	call := Call{
		Script:    FenceSet,
		Keys:      []string{key},
		Args:      []string{strconv.FormatUint(token, 10), value},
		Retryable: true, // writing the same value with the same token twice is harmless
	}
	v, err := r.Exec(ctx, call).AsIntSlice()
	err = call.explain(err)
	if err == nil && len(v) != 2 {
		err = fmt.Errorf("fence_set replied %v", v)
	}
	if err != nil {
		return false, 0, err
	}
	return v[0] == 1, v[1], nil
}
