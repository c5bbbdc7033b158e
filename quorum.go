package redisync

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/bounded"
	"github.com/go-redisync/redisync/internal/quorum"
	"github.com/go-redisync/redisync/internal/scripts"
)

// NewQuorum returns a Client whose Mutex and FencedMutex handles are held on
// a majority of the independent deployments rcs (an odd number, at least 3;
// each a standalone server or a Sentinel-managed primary, not shards of one
// cluster), as the Redlock algorithm describes, so that losing one of them,
// or its data, loses no lock. Its other constructors panic.
//
// An acquire asks every server at once and holds when a majority granted
// it within its validity (the lease, less the round trip and a clock-drift
// allowance of 1% plus 2 ms); otherwise what it took is given back and the
// call waits, on every server's channel, and tries again (after a random
// pause when the votes were split). The watchdog renews on every server,
// and the hold is lost, and reported through Done and Err, when a majority
// can no longer be renewed within its validity. A server that restarted
// empty does not vote until every lease it could have granted has run out
// (the Client's lease: a handle constructor given a longer one panics, as
// does one given WithSyncReplicas), and fencing tokens
// never repeat or go back while a majority keeps its data
// (docs/guarantees.md, Quorum locks). When fewer than a majority of the
// servers answer, LockContext returns an error wrapping [ErrNoQuorum] that
// names them.
//
// NewQuorum marks the servers of a new quorum (a majority without redisync's
// marker) so that they vote at once; it fails when fewer than a majority
// answer within 5 s, and when two of rcs reach one server (the same client
// twice, or two clients of one server: each server is given a key of its
// own that no other may see). Close the Client before the rueidis clients.
func NewQuorum(rcs []rueidis.Client, opts ...Option) (*Client, error) {
	if n := len(rcs); n < 3 || n%2 == 0 {
		return nil, fmt.Errorf("redisync: a quorum needs an odd number of deployments, at least 3; got %d", n)
	}
	cfg := defaultConfig().with(opts)
	switch {
	case cfg.err != nil:
		return nil, cfg.err
	case cfg.syncReplicas != 0:
		return nil, errQuorumReplicas
	}
	servers := make([]quorum.Server, len(rcs))
	rcs = slices.Clone(rcs)
	for i, rc := range rcs {
		switch {
		case rc == nil:
			return nil, fmt.Errorf("redisync: quorum deployment %d is a nil rueidis client", i)
		case rc.Mode() == rueidis.ClientModeCluster:
			return nil, fmt.Errorf("redisync: quorum deployment %d is a Redis Cluster: a quorum's deployments are standalone servers or Sentinel primaries", i)
		}
		for j := range i {
			if sameClient(rcs[j], rc) {
				return nil, fmt.Errorf("redisync: quorum deployments %d and %d are the same rueidis client: a majority must be of distinct servers", j, i)
			}
		}
		rc = bounded.Wrap(rc) // every call returns by its context's end (see internal/bounded)
		rcs[i] = rc
		servers[i] = quorum.Server{Name: serverName(rc, i), RC: rc, Runner: scripts.NewRunner(rc, false)}
	}
	qcfg := quorum.DefaultConfig(cfg.leaseTTL())
	qcfg.Logger = cfg.logger
	q, err := quorum.New(servers, qcfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := q.Init(ctx); err != nil {
		q.Close()
		return nil, err
	}
	return newClient(cfg, rcs, servers[0].Runner, oneServer, q), nil
}

// sameClient reports whether a and b are one client (b not yet wrapped).
func sameClient(a, b rueidis.Client) bool {
	if w, ok := a.(bounded.Client); ok {
		a = w.Client
	}
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Type() == vb.Type() && va.Comparable() && a == b
}

// errQuorumReplicas refuses WithSyncReplicas on a quorum Client or handle.
var errQuorumReplicas = errors.New("redisync: WithSyncReplicas does not apply to a quorum: its majority is of independent deployments")

// checkQuorumHandle panics if cfg, the options of a new handle of the
// quorum Client c, is one the quorum cannot honour: a lease longer than
// c's, which a restarted server waits out before it votes again (a hold
// with a longer one could still be on it then), or WithSyncReplicas.
func (c *Client) checkQuorumHandle(cfg *config) {
	switch lease, most := cfg.leaseTTL(), c.cfg.leaseTTL(); {
	case lease > most:
		panic(fmt.Sprintf("redisync: a handle of a quorum Client may not have a longer lease (%v) than its Client (%v): "+
			"a restarted server stays out of the vote for the Client's", lease, most))
	case cfg.syncReplicas != 0:
		panic(errQuorumReplicas.Error())
	}
}

// serverName names deployment i of a quorum in errors: its address.
func serverName(rc rueidis.Client, i int) string {
	var addrs []string
	for addr := range rc.Nodes() {
		addrs = append(addrs, addr)
	}
	if len(addrs) == 0 {
		return "deployment " + strconv.Itoa(i)
	}
	slices.Sort(addrs)
	return addrs[0]
}
