package scripts

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/bounded"
	"github.com/go-redisync/redisync/internal/layout"
)

// A Sync asks that a call's writes be acknowledged by replicas: Exec sends
// WAIT after the script, on the same connection to the node that ran it (see
// sameNode), and records in Acked how many replicas acknowledged within
// Timeout, out of Wanted.
type Sync struct {
	// N is how many replicas must acknowledge; N < 0 asks for every replica
	// connected to the node (learnt from ROLE, sent with each call).
	N       int
	Timeout time.Duration
	// Set by Exec: Wanted is N, or the node's replicas for N < 0.
	Wanted, Acked int64
	// Failed is set by Exec when WAIT itself failed (a server that refuses
	// it to the user, say): Acked counts nothing then.
	Failed error
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

// execSync runs call followed by WAIT, and by ROLE, which tells how many
// replicas the node has for the next call with N < 0.
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
	batch := func(sha bool) []rueidis.RedisResult {
		return r.sameNode(ctx, func(b rueidis.Builder) rueidis.Commands { // rueidis recycles a command once sent: build each anew
			return rueidis.Commands{r.command(call, sha),
				b.Wait().Numreplicas(s.Wanted).Timeout(max(s.Timeout.Milliseconds(), 1)).Build(), b.Role().Build()}
		})
	}
	results := batch(true)
	if isNoScript(results[0].Error()) {
		results = batch(false)
	}
	s.Acked, s.Failed = results[1].AsInt64()
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
	results := r.sameNode(ctx, func(b rueidis.Builder) rueidis.Commands {
		return rueidis.Commands{b.Exists().Key(key).Build(), b.Role().Build()}
	})
	n, err := replicasOf(results[1])
	if err != nil {
		return 0, fmt.Errorf("count the replicas of %q's node: %w", key, err)
	}
	r.counts.set(slot, n)
	return n, nil
}

// sameNode sends the commands that build returns, the first on a key and the
// others keyless, on one connection to the node that serves the key, and
// returns their replies: a keyless command such as WAIT or ROLE then answers
// for that node. A first command answered MOVED or ASK did not run there; the
// batch is built again and sent to the node named (after ASKING for ASK).
// A second redirection is returned as the first command's reply, which Exec
// retries (see Transient).
//
// rueidis's own redirection does not do for such a batch: it sends only the
// redirected command to the new node and keeps the replies of the others
// from the old one, and v1.0.79 panics (index out of range in
// clusterClient.doresultfn) following an ASK in a batch that holds a
// blocking command such as WAIT.
func (r *Runner) sameNode(ctx context.Context, build func(rueidis.Builder) rueidis.Commands) []rueidis.RedisResult {
	// Dedicate, not Dedicated: a closure given to an interface's method
	// would move build, and with it every call's keys and arguments, to the
	// heap, for the calls without WAIT too.
	dc, done, err := dedicate(ctx, r.rc)
	if err != nil {
		return errorResults(len(build(r.rc.B())), err)
	}
	results := dc.DoMulti(ctx, build(dc.B())...)
	done()
	addr, ask := redirection(results[0].Error())
	if addr == "" {
		return results
	}
	node, ok := r.rc.Nodes()[addr]
	if !ok {
		return results
	}
	cmds := build(node.B())
	if ask {
		cmds = append(rueidis.Commands{node.B().Asking().Build()}, cmds...)
	}
	results = bounded.Wrap(node).DoMulti(ctx, cmds...) // a node's connection may be redialing
	if ask {
		results = results[1:]
	}
	return results
}

// dedicate returns a dedicated client of rc and its release, or ctx.Err()
// when ctx ends first. rueidis dials a connection for it when none is idle,
// with no deadline (Dedicate takes no context): behind a server that
// accepts connections and never answers, it waited until rueidis's own dial
// timeout. A client that comes after ctx ended goes back to rueidis.
func dedicate(ctx context.Context, rc rueidis.Client) (rueidis.DedicatedClient, func(), error) {
	if ctx.Done() == nil {
		dc, done := rc.Dedicate()
		return dc, done, nil
	}
	type dedicated struct {
		dc   rueidis.DedicatedClient
		done func()
	}
	got := make(chan dedicated, 1)
	go func() {
		dc, done := rc.Dedicate()
		got <- dedicated{dc, done}
	}()
	select {
	case d := <-got:
		return d.dc, d.done, nil
	case <-ctx.Done():
		go func() { (<-got).done() }()
		return nil, nil, ctx.Err()
	}
}

// errorResults returns n results, each err.
func errorResults(n int, err error) []rueidis.RedisResult {
	out := make([]rueidis.RedisResult, n)
	for i := range out {
		out[i] = rueidis.NewErrorResult(err)
	}
	return out
}

// redirection returns the node that err (MOVED or ASK) sends a call to, and
// whether it is an ASK; "" for any other reply.
func redirection(err error) (addr string, ask bool) {
	re, ok := rueidis.IsRedisErr(err)
	if !ok {
		return "", false
	}
	if addr, ok := re.IsMoved(); ok {
		return addr, false
	}
	addr, ask = re.IsAsk()
	return addr, ask
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
