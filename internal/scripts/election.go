package scripts

import (
	"context"
	"strconv"

	"github.com/go-redisync/redisync/internal/layout"
)

// The scripts of Election. A leadership has a Mutex hash's shape, so
// MutexRenew renews it, MutexRelease ends it and MutexForceUnlock deletes it.
var (
	ElectionCampaign = loadWith("election_campaign", "hold_lib")
	ElectionProclaim = load("election_proclaim")
)

// ElectionKeys are the names that an Election's scripts take, made once per
// handle: the leadership, its channel, the prefix of its latches (a call
// sends the hold's latch instead: see latchKey).
type ElectionKeys [3]string

// ElectionKeysOf returns the names of the keys of the Election at l.
func ElectionKeysOf(l layout.Election) ElectionKeys {
	return ElectionKeys{l.Key, l.Channel, l.Latch}
}

// Campaign runs election_campaign: hold h becomes the Election k's leader
// with value, unless another hold leads (Busy, with its PTTL).
func (r *Runner) Campaign(ctx context.Context, k *ElectionKeys, h Hold, value string) (Reply, error) {
	keys := [...]string{k[0], latchKey(k[2], h.Field, h.LatchKey), k[1]}
	return lockReply(r.integer(ctx, Call{Script: ElectionCampaign, Keys: keys[:],
		Args: []string{h.LeaseMS, h.Field, value, r.publish}}))
}

// Proclaim runs election_proclaim: the leader's value becomes value if field
// is the leader's hold and no proclamation numbered rev or later has landed.
// It returns 1 when value is proclaimed, 0 when field does not lead, -1 when
// a later proclamation had landed.
func (r *Runner) Proclaim(ctx context.Context, k *ElectionKeys, field, value string, rev int64) (int64, error) {
	return r.integer(ctx, Call{Script: ElectionProclaim, Keys: k[:2],
		Args: []string{field, value, strconv.FormatInt(rev, 10), r.publish}})
}

// Resign runs mutex_release on the leadership: rel's leadership of the
// Election k ends and its campaigners are woken ("0").
func (r *Runner) Resign(ctx context.Context, k *ElectionKeys, rel *Release) (Released, error) {
	var argv [7]string
	keys := [...]string{k[0], k[1], latchKey(k[2], rel.Field, rel.LatchKey)}
	return r.queueReleased(ctx, Call{Script: MutexRelease, Keys: keys[:], Args: r.argv(&argv, rel)})
}
