package scripts

import (
	"context"
	"fmt"
	"strconv"

	"github.com/go-redisync/redisync/internal/layout"
)

// The scripts of a quorum lock, run on each of its servers. Their contracts
// are in the headers of the .lua files; quorum_lib.lua says how a server
// that restarted empty is told apart and kept from voting.
var (
	QuorumAcquire = loadWith("quorum_acquire", "queue_lib", "quorum_lib")
	QuorumRenew   = load("quorum_renew")
	QuorumToken   = loadWith("quorum_token", "queue_lib", "quorum_lib")
	QuorumInit    = load("quorum_init")
	QuorumCatchUp = loadWith("quorum_catchup", "queue_lib", "quorum_lib")
)

// QuorumKeys are the names that a quorum lock's scripts take on one server:
// the lock, its channel, the prefix of its latches (a call sends the hold's
// latch instead: see latchKey), the token counter, the server's marker.
type QuorumKeys [5]string

// QuorumKeysOf returns the names of the keys of the quorum lock at l.
func QuorumKeysOf(l layout.Mutex) QuorumKeys {
	return QuorumKeys{l.Key, l.Channel, l.Latch, l.Token, layout.QuorumMarker}
}

// A Vote is one server's answer to a quorum acquire: the Reply (Acquired,
// Busy with the lock's PTTL, Gone, Refused; Abstain with the milliseconds
// before the server votes), and the lock's token counter there, -1 when the
// server cannot tell it (it restarted empty, and no token was written since).
type Vote struct {
	Reply
	Abstain bool
	Counter int64
	// Stale reports a server that restarted empty and cannot tell its
	// counters until a Client catches it up (see CatchUpQuorum).
	Stale bool
}

// AcquireQuorum runs quorum_acquire on one server: hold h takes the lock k
// there, or re-enters it; a server found without its marker, or marked less
// than bound ago, abstains.
func (r *Runner) AcquireQuorum(ctx context.Context, k *QuorumKeys, h Hold, bound string) (Vote, error) {
	keys := [...]string{k[0], latchKey(k[2], h.Field, h.LatchKey), k[3], k[4]}
	v, err := r.ints(ctx, Call{Script: QuorumAcquire, Keys: keys[:], Args: []string{h.LeaseMS, h.Field, strconv.Itoa(h.Count), bound}}, 4)
	if err == nil && len(v) != 4 {
		err = fmt.Errorf("quorum_acquire replied %v", v)
	}
	if err != nil {
		return Vote{}, err
	}
	vote := Vote{Counter: v[2], Stale: v[3] == 0}
	switch v[0] {
	case 1:
		vote.Outcome = Acquired
	case 0:
		vote.Outcome, vote.Value = Busy, v[1]
	case -3:
		vote.Outcome = Gone
	case -4:
		vote.Outcome = Refused
	case -5:
		vote.Outcome, vote.Value, vote.Abstain = Busy, v[1], true
	default:
		return Vote{}, fmt.Errorf("quorum_acquire replied %v", v)
	}
	return vote, nil
}

// RenewQuorum runs quorum_renew on one server: the hold field of the lock k
// gets a lease of leaseMS there if it is there. It reports whether it was.
func (r *Runner) RenewQuorum(ctx context.Context, k *QuorumKeys, field, leaseMS string) (bool, error) {
	n, err := r.integer(ctx, Call{Script: QuorumRenew, Keys: k[0:1], Args: []string{field, leaseMS}, Retryable: true})
	return n == 1, err
}

// RaiseQuorumToken runs quorum_token on one server: the lock k's token
// counter there becomes at least value. It returns the counter.
func (r *Runner) RaiseQuorumToken(ctx context.Context, k *QuorumKeys, value int64, bound string) (int64, error) {
	return r.integer(ctx, Call{Script: QuorumToken, Keys: k[3:5], Args: []string{strconv.FormatInt(value, 10), bound}, Retryable: true})
}

// CatchUpQuorum runs quorum_catchup on one server, whose marker's "from"
// was from when the catch-up began: each counter in keys rises to the value
// of the same index, and the server is marked caught up when last is set.
// It reports false, changing nothing, when the marker is another one now.
func (r *Runner) CatchUpQuorum(ctx context.Context, from string, keys, values []string, last bool) (bool, error) {
	args := make([]string, 0, 2+len(values))
	args = append(args, from, "0")
	if last {
		args[1] = "1"
	}
	n, err := r.integer(ctx, Call{Script: QuorumCatchUp, Keys: append([]string{layout.QuorumMarker}, keys...),
		Args: append(args, values...), Retryable: true})
	return n == 1, err
}

// InitQuorum runs quorum_init on one server: the marker of a server of a
// new quorum, which votes at once. It reports whether it wrote it.
func (r *Runner) InitQuorum(ctx context.Context) (bool, error) {
	n, err := r.integer(ctx, Call{Script: QuorumInit, Keys: []string{layout.QuorumMarker}, Retryable: true})
	return n == 1, err
}

// ReleaseQuorum runs mutex_release on one server: rel's hold of the quorum
// lock k ends there, and the waiters there are woken ("0").
func (r *Runner) ReleaseQuorum(ctx context.Context, k *QuorumKeys, rel *Release) (Released, error) {
	var argv [7]string
	keys := [...]string{k[0], k[1], latchKey(k[2], rel.Field, rel.LatchKey)}
	return r.queueReleased(ctx, Call{Script: MutexRelease, Keys: keys[:], Args: r.argv(&argv, rel)})
}
