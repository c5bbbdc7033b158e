package scripts

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/layout"
)

// A Sync asks that a call's writes be acknowledged by replicas: Exec sends
// WAIT after the script, on the same connection (rueidis sends a batch with a
// blocking command on one dedicated connection, and on a cluster a keyless
// command goes to the node of the batch's keys), and records in Acked how
// many replicas acknowledged within Timeout, out of Wanted.
type Sync struct {
	// N is how many replicas must acknowledge; N < 0 asks for every replica
	// connected to the node (learnt from ROLE, sent with each call).
	N       int
	Timeout time.Duration
	// Set by Exec: Wanted is N, or the node's replicas for N < 0.
	Wanted, Acked int64
}

type syncKey struct{}

// WithSync returns ctx carrying s: a call that Exec runs with it is followed
// by WAIT.
func WithSync(ctx context.Context, s *Sync) context.Context {
	return context.WithValue(ctx, syncKey{}, s)
}

// replicaCounts remembers, per node (by slot on a cluster), how many
// replicas were connected at its latest ROLE: the N of a WAIT for every
// replica.
type replicaCounts struct {
	mu sync.Mutex
	n  map[uint16]int64
}

// execSync runs call followed by WAIT on its connection, and by ROLE, which
// tells how many replicas the node has for the next call with N < 0.
func (r *Runner) execSync(ctx context.Context, call Call, s *Sync) rueidis.RedisResult {
	var slot uint16
	if r.rc.Mode() == rueidis.ClientModeCluster {
		slot = layout.Slot(call.Keys[0])
	}
	s.Wanted = int64(s.N)
	if s.N < 0 {
		n, err := r.replicas(ctx, call.Keys[0], slot)
		if err != nil {
			return rueidis.NewErrorResult(err)
		}
		s.Wanted = n
	}
	batch := func(sha bool) []rueidis.RedisResult { // rueidis recycles a command once sent: build each anew
		return r.rc.DoMulti(ctx, r.command(call, sha),
			r.rc.B().Wait().Numreplicas(s.Wanted).Timeout(max(s.Timeout.Milliseconds(), 1)).Build(), r.rc.B().Role().Build())
	}
	results := batch(true)
	if isNoScript(results[0].Error()) {
		results = batch(false)
	}
	s.Acked, _ = results[1].AsInt64()
	if n, err := replicasOf(results[2]); err == nil {
		r.counts.set(slot, n)
	}
	return results[0]
}

// replicas returns the replicas connected to key's node, asking it (ROLE,
// sent with a command on key so that it reaches that node) when unknown.
func (r *Runner) replicas(ctx context.Context, key string, slot uint16) (int64, error) {
	if n, ok := r.counts.get(slot); ok {
		return n, nil
	}
	results := r.rc.DoMulti(ctx, r.rc.B().Exists().Key(key).Build(), r.rc.B().Role().Build())
	n, err := replicasOf(results[1])
	if err != nil {
		return 0, fmt.Errorf("count the replicas of %q's node: %w", key, err)
	}
	r.counts.set(slot, n)
	return n, nil
}

// replicasOf reads the number of connected replicas from a primary's ROLE
// reply: ["master", offset, [[ip, port, offset], ...]].
func replicasOf(res rueidis.RedisResult) (int64, error) {
	role, err := res.ToArray()
	if err != nil {
		return 0, err
	}
	if len(role) != 3 {
		return 0, fmt.Errorf("ROLE replied %d elements, not a primary's 3", len(role))
	}
	replicas, err := role[2].ToArray()
	return int64(len(replicas)), err
}

func (c *replicaCounts) get(slot uint16) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.n[slot]
	return n, ok
}

func (c *replicaCounts) set(slot uint16, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = make(map[uint16]int64)
	}
	c.n[slot] = n
}
