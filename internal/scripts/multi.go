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

// MultiKeys are the KEYS of the scripts of several Mutexes held as one,
// made once per handle: the acquire's Acquire (lock and latch prefix per
// lock) and the release's Release (lock, channel, latch prefix per lock).
type MultiKeys struct {
	Locks, Channels  []string
	Acquire, Release []string
}

// MultiKeysOf returns the KEYS of the scripts of the Mutexes at ls, held as
// one (on Redis Cluster, all in one slot).
func MultiKeysOf(ls []layout.Mutex) MultiKeys {
	var k MultiKeys
	for _, l := range ls {
		k.Locks = append(k.Locks, l.Key)
		k.Channels = append(k.Channels, l.Channel)
		k.Acquire = append(k.Acquire, l.Key, l.Latch)
		k.Release = append(k.Release, l.Key, l.Channel, l.Latch)
	}
	return k
}

// AcquireMulti runs multi_acquire: hold h takes every lock k names, or
// none. A Busy reply has the Channel of the lock that is taken, where to wait.
func (r *Runner) AcquireMulti(ctx context.Context, k *MultiKeys, h Hold) (Reply, error) {
	call := Call{Script: MultiAcquire, Keys: k.Acquire, Args: []string{h.LeaseMS, h.Field}}
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
	return r.released(ctx, Call{Script: MultiRelease, Keys: k.Release, Args: r.argv(&argv, rel)})
}
