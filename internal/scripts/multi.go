package scripts

import (
	"context"
	"fmt"

	"github.com/go-redisync/redisync/internal/layout"
)

// The scripts of MultiMutex: several Mutexes held as one hold.
var (
	MultiAcquire = load("multi_acquire")
	MultiRelease = load("multi_release")
	// MultiRenew renews MultiMutex leases; a lease's Args are the hold's
	// field, the lease in milliseconds and the number of its Keys.
	MultiRenew = load("multi_renew")
)

// MultiKeys are the names that the scripts of several Mutexes held as one
// take, made once per handle: each lock, its channel and the prefix of its
// latches.
type MultiKeys struct {
	Locks, Channels, Latches []string
}

// MultiKeysOf returns the names of the keys of the Mutexes at ls, held as
// one (on Redis Cluster, all in one slot).
func MultiKeysOf(ls []layout.Mutex) MultiKeys {
	var k MultiKeys
	for _, l := range ls {
		k.Locks = append(k.Locks, l.Key)
		k.Channels = append(k.Channels, l.Channel)
		k.Latches = append(k.Latches, l.Latch)
	}
	return k
}

// acquireKeys returns multi_acquire's KEYS for the hold field: each lock and
// the hold's latch there.
func (k *MultiKeys) acquireKeys(field string) []string {
	keys := make([]string, 0, 2*len(k.Locks))
	for i, lock := range k.Locks {
		keys = append(keys, lock, latchKey(k.Latches[i], field, ""))
	}
	return keys
}

// releaseKeys returns multi_release's KEYS for the hold field: each lock,
// its channel and the hold's latch there.
func (k *MultiKeys) releaseKeys(field string) []string {
	keys := make([]string, 0, 3*len(k.Locks))
	for i, lock := range k.Locks {
		keys = append(keys, lock, k.Channels[i], latchKey(k.Latches[i], field, ""))
	}
	return keys
}

// AcquireMulti runs multi_acquire: hold h takes every lock k names, or
// none. A Busy reply has the Channel of the lock that is taken, where to wait.
func (r *Runner) AcquireMulti(ctx context.Context, k *MultiKeys, h Hold) (Reply, error) {
	call := Call{Script: MultiAcquire, Keys: k.acquireKeys(h.Field), Args: []string{h.LeaseMS, h.Field}}
	v, err := r.Exec(ctx, call).AsIntSlice()
	err = call.explain(err)
	if err == nil && (len(v) != 3 || v[0] != 1 && (v[2] < 1 || int(v[2]) > len(k.Locks))) {
		err = fmt.Errorf("%s replied %v", call.Script.Name, v)
	}
	switch {
	case err != nil:
		return Reply{}, err
	case v[0] == 1:
		return Reply{Outcome: Acquired}, nil
	case v[0] == -4:
		return Reply{Outcome: Refused}, nil
	}
	return Reply{Outcome: Busy, Value: v[1], Channel: k.Channels[v[2]-1]}, nil
}

// ReleaseMulti runs multi_release: rel's hold of the locks k names ends,
// and each lock's waiters are woken.
func (r *Runner) ReleaseMulti(ctx context.Context, k *MultiKeys, rel *Release) (Released, error) {
	var argv [7]string
	return r.released(ctx, Call{Script: MultiRelease, Keys: k.releaseKeys(rel.Field), Args: r.argv(&argv, rel)})
}
