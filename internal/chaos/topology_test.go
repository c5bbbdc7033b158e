package chaos

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/faultproxy"
	"github.com/go-redisync/redisync/internal/redisserver"
)

// The topologies the suite runs on.
const (
	Standalone = "standalone" // one server, with AOF (appendfsync always)
	Cluster    = "cluster"    // three masters with a replica each
	Sentinel   = "sentinel"   // a primary and a replica behind three sentinels
	// Quorum is three independent servers, each with AOF (appendfsync
	// always), under one quorum Client per worker (redisync.NewQuorum):
	// only the Mutex and FencedMutex slots run (see quorumSlot).
	Quorum = "quorum"
)

// Topologies lists them.
var Topologies = []string{Standalone, Cluster, Sentinel, Quorum}

// quorumServers is how many servers a quorum topology has.
const quorumServers = 3

// topologyFaults are the fault kinds that need a topology other than a lone
// server (failovers, migrations, replicas), and the topologies they need.
var topologyFaults = map[string][]string{
	"F13": {Cluster, Sentinel},
	"F14": {Cluster},
	"F15": {Cluster, Sentinel},
	"F16": {Cluster, Sentinel},
	"F18": {Quorum},
	"F19": {Quorum},
	"F20": {Quorum},
	"F21": {Quorum},
	"F22": {Quorum},
	// F24 holds back a semaphore's grant: a quorum runs none.
	"F24": {Standalone, Cluster, Sentinel},
}

// quorumFaults are the fault kinds injected on a quorum: a worker's (each
// against the majority it holds on), SCRIPT FLUSH on every server, and the
// faults of one server at a time. Not F9 (a key deleted on one server
// without its restart marker lets it vote for a rival at once: the quorum
// detects restarts, not deletions; docs/guarantees.md) nor F17 (no queue in
// Redis).
var quorumFaults = []string{"F1", "F2", "F5", "F6", "F7", "F8", "F10", "F18", "F19", "F20", "F21", "F22", "F23"}

// standaloneOnly are the fault kinds that restart the lone server.
var standaloneOnly = []string{"F3", "F4"}

// defaultKinds returns every fault kind that applies on topology kind.
func defaultKinds(kind string) []string {
	var out []string
	for _, k := range FaultKinds {
		if applies(k, kind) {
			out = append(out, k)
		}
	}
	return out
}

// applies reports whether fault kind k can be injected on topology kind.
func applies(k, kind string) bool {
	if kind == Quorum {
		return slices.Contains(quorumFaults, k)
	}
	if on, ok := topologyFaults[k]; ok {
		return slices.Contains(on, kind)
	}
	return kind == Standalone || !slices.Contains(standaloneOnly, k)
}

// A topology is the lock servers of a run. The fenced resource's server is
// apart and never faulted.
type topology struct {
	kind     string
	server   *redisserver.Server // standalone
	cluster  *redisserver.Cluster
	sentinel *redisserver.SentinelSet
	quorum   []*redisserver.Server
	// admin is the coordinator's client, routed as the workers' are; of a
	// quorum, the first server's.
	admin rueidis.Client
}

// startTopology starts the lock servers of kind and the coordinator's client.
func startTopology(t *testing.T, kind string) *topology {
	tp := &topology{kind: kind}
	var err error
	switch kind {
	case Standalone:
		// F4 restarts from the AOF, F3 wipes it first (a restart without
		// persistence).
		// A small rewrite threshold keeps the AOF, and so F4's restart,
		// short: at the default (64 MB) a 5-minute run's restarts took up
		// to 1.7 s, longer than a lease.
		tp.server, err = redisserver.StartServer("--appendonly", "yes", "--appendfsync", "always", "--auto-aof-rewrite-min-size", "4mb")
	case Cluster:
		tp.cluster, err = redisserver.StartClusterWithReplicas(3)
	case Sentinel:
		tp.sentinel, err = redisserver.StartSentinelSet()
	case Quorum:
		// F19 restarts a server from its AOF, F18 wipes it first.
		for range quorumServers {
			var s *redisserver.Server
			s, err = redisserver.StartServer("--appendonly", "yes", "--appendfsync", "always", "--auto-aof-rewrite-min-size", "4mb")
			if err != nil {
				break
			}
			tp.quorum = append(tp.quorum, s)
		}
	default:
		t.Fatalf("-chaos.topology: unknown topology %q (want one of %v)", kind, Topologies)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.stop() })
	init, set := tp.entry()
	if tp.quorum != nil {
		init = init[:1]
	}
	tp.admin, err = rueidis.NewClient(clientOption(init, set, nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tp.admin.Close)
	return tp
}

func (tp *topology) stop() error {
	switch {
	case tp.cluster != nil:
		return tp.cluster.Stop()
	case tp.sentinel != nil:
		return tp.sentinel.Stop()
	case tp.quorum != nil:
		var errs []error
		for _, s := range tp.quorum {
			errs = append(errs, s.Stop())
		}
		return errors.Join(errs...)
	}
	return tp.server.Stop()
}

// nodes returns the data servers, masters and replicas: each worker reaches
// every one through a proxy of its own.
func (tp *topology) nodes() []*redisserver.Server {
	switch {
	case tp.cluster != nil:
		return tp.cluster.Servers()
	case tp.sentinel != nil:
		return tp.sentinel.Servers()
	case tp.quorum != nil:
		return tp.quorum
	}
	return []*redisserver.Server{tp.server}
}

// entry returns where a client starts: its seed addresses and, behind
// sentinels, the master set's name; of a quorum, every server's address (a
// client each).
func (tp *topology) entry() (init []string, masterSet string) {
	switch {
	case tp.quorum != nil:
		return tp.addrs(), ""
	case tp.cluster != nil:
		// One seed: the client learns every node from CLUSTER SLOTS.
		return tp.cluster.Addrs[:1], ""
	case tp.sentinel != nil:
		return tp.sentinel.Addrs, redisserver.MasterSet
	}
	return []string{tp.server.Addr}, ""
}

// masters returns the addresses of the data servers that are masters now.
func (tp *topology) masters(ctx context.Context) []string {
	switch {
	case tp.cluster != nil:
		return tp.cluster.Masters(ctx)
	case tp.sentinel != nil:
		return tp.sentinel.Masters(ctx)
	case tp.quorum != nil:
		return tp.addrs()
	}
	return []string{tp.server.Addr}
}

// pttl returns a function that asks the lock server at addr for a key's
// PTTL (through the coordinator's client, which routes it; on a quorum,
// through a client of that server, made once), and what closes those
// clients. A connection per key would make a run's end take minutes: its
// latches number in the thousands.
func (tp *topology) pttl() (pttl func(addr, key string) (int64, error), done func()) {
	ctx := context.Background()
	clients := map[string]rueidis.Client{}
	pttl = func(addr, key string) (int64, error) {
		rc := tp.admin
		if tp.quorum != nil {
			if rc = clients[addr]; rc == nil {
				var err error
				if rc, err = rueidis.NewClient(clientOption([]string{addr}, "", nil)); err != nil {
					return 0, err
				}
				clients[addr] = rc
			}
		}
		return rc.Do(ctx, rc.B().Pttl().Key(key).Build()).AsInt64()
	}
	return pttl, func() {
		for _, rc := range clients {
			rc.Close()
		}
	}
}

// addrs returns the addresses of the data servers.
func (tp *topology) addrs() []string {
	var out []string
	for _, s := range tp.nodes() {
		out = append(out, s.Addr)
	}
	return out
}

// slotRuns reports whether slot g runs on the topology: on a quorum, the
// Mutex and FencedMutex slots only (a quorum Client makes no other kind).
func (tp *topology) slotRuns(g int) bool {
	return tp.kind != Quorum || quorumSlot(slots[g].res)
}

// quorumSlot reports whether a slot on resource res runs on a quorum.
func quorumSlot(res string) bool {
	return res == "chaos-mutex" || res == "chaos-shared" || res == "chaos-fenced" || res == plainRes
}

// settle waits until every data server is a master or a replica in sync,
// with as many masters as the topology should have (behind sentinels: the
// primary they name, the old one turned into its replica), so that the next
// failover finds a replica to promote.
func (tp *topology) settle(ctx context.Context) error {
	var want []string
	switch {
	case tp.server != nil, tp.quorum != nil:
		return nil
	case tp.sentinel != nil:
		p, err := tp.sentinel.PrimaryAddr(ctx)
		if err != nil {
			return err
		}
		want = []string{p}
	default:
		err := waitUntil(ctx, func() bool { return len(tp.cluster.Masters(ctx)) == len(tp.cluster.Nodes) })
		if err != nil {
			return fmt.Errorf("waiting for %d masters: %w", len(tp.cluster.Nodes), err)
		}
		want = tp.cluster.Masters(ctx)
	}
	var errs []error
	for _, s := range tp.nodes() {
		if !slices.Contains(want, s.Addr) {
			errs = append(errs, redisserver.WaitReplica(ctx, s.Addr))
		}
	}
	return errors.Join(errs...)
}

// waitUntil polls cond until it holds or ctx ends.
func waitUntil(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// clientOption returns the rueidis options of a client of the lock servers
// that starts from init (behind sentinels: masterSet's) and dials the data
// servers through proxies (a server's address to its proxy's); the other
// addresses (sentinels) are dialled directly.
func clientOption(init []string, masterSet string, proxies map[string]string) rueidis.ClientOption {
	opt := rueidis.ClientOption{InitAddress: init, DisableCache: true}
	if masterSet != "" {
		opt.Sentinel = rueidis.SentinelOption{MasterSet: masterSet, TopologyRefreshInterval: time.Second}
	}
	if len(init) > 1 || masterSet != "" {
		// A killed master is then noticed in seconds, not at the default's
		// ten.
		opt.ConnWriteTimeout = 3 * time.Second
	}
	if proxies != nil {
		opt.DialCtxFn = func(ctx context.Context, dst string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
			if px, ok := proxies[dst]; ok {
				dst = px
			}
			return d.DialContext(ctx, "tcp", dst)
		}
	}
	return opt
}

// A proxySet is a worker's proxies, one per data server; the faults of the
// worker's connections apply to all of them.
type proxySet struct {
	list  []*faultproxy.Proxy
	addrs map[string]string // a server's address to its proxy's
}

func startProxies(nodes []*redisserver.Server) (*proxySet, error) {
	ps := &proxySet{addrs: map[string]string{}}
	for _, n := range nodes {
		px, err := faultproxy.Start(n.Addr)
		if err != nil {
			return nil, errors.Join(err, ps.Close())
		}
		ps.list = append(ps.list, px)
		ps.addrs[n.Addr] = px.Addr()
	}
	return ps, nil
}

func (ps *proxySet) Blackhole(dir faultproxy.Direction, on bool) {
	for _, px := range ps.list {
		px.Blackhole(dir, on)
	}
}

// ResetAll closes every open connection abruptly (RST).
func (ps *proxySet) ResetAll() {
	for _, px := range ps.list {
		px.ResetAll()
	}
}

func (ps *proxySet) SetLatency(dir faultproxy.Direction, base, jitter time.Duration) {
	for _, px := range ps.list {
		px.SetLatency(dir, base, jitter)
	}
}

func (ps *proxySet) DropNextReply(substr string) {
	for _, px := range ps.list {
		px.DropNextReply(substr)
	}
}

func (ps *proxySet) StopDropping() {
	for _, px := range ps.list {
		px.StopDropping()
	}
}

// dropped counts the replies dropped so far.
func (ps *proxySet) dropped() int64 {
	var n int64
	for _, px := range ps.list {
		n += px.Stats().RepliesDropped
	}
	return n
}

func (ps *proxySet) StallNext(substr string) (resume func()) {
	var resumes []func()
	for _, px := range ps.list {
		resumes = append(resumes, px.StallNext(substr))
	}
	return func() {
		for _, r := range resumes {
			r()
		}
	}
}

// StallNextReply arms StallNextReply on every proxy (see stalled).
func (ps *proxySet) StallNextReply(substrs ...string) (resume func()) {
	var resumes []func()
	for _, px := range ps.list {
		resumes = append(resumes, px.StallNextReply(substrs...))
	}
	return func() {
		for _, r := range resumes {
			r()
		}
	}
}

// stalled counts the connections stalled so far by StallNext or
// StallNextReply.
func (ps *proxySet) stalled() int64 {
	var n int64
	for _, px := range ps.list {
		n += px.Stats().Stalled
	}
	return n
}

func (ps *proxySet) Close() error {
	var errs []error
	for _, px := range ps.list {
		errs = append(errs, px.Close())
	}
	return errors.Join(errs...)
}

// The quorum topology gets the workers' faults and its servers' own, and no
// other topology gets those; its slots are the Mutex and FencedMutex ones.
func TestQuorumTopologyFaults(t *testing.T) {
	got := defaultKinds(Quorum)
	if !slices.Equal(got, quorumFaults) {
		t.Errorf("quorum faults: got %v, want %v", got, quorumFaults)
	}
	for _, kind := range []string{Standalone, Cluster, Sentinel} {
		for _, k := range []string{"F18", "F19", "F20", "F21", "F22"} {
			if applies(k, kind) {
				t.Errorf("%s applies to %s", k, kind)
			}
		}
	}
	tp := &topology{kind: Quorum}
	var running []string
	for g := range slots {
		if tp.slotRuns(g) {
			running = append(running, slots[g].res)
		}
	}
	want := []string{"chaos-mutex", "chaos-mutex", "chaos-fenced", "chaos-shared", "chaos-shared", plainRes}
	if !slices.Equal(running, want) {
		t.Errorf("slots on a quorum: got %v, want %v", running, want)
	}
}
