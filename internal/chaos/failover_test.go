package chaos

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redisserver"
)

// topologyBudget bounds one failover, migration or resync.
const topologyBudget = 30 * time.Second

// failover injects F13, F14 or F15 on the master of a lock held by a parked
// holder: a planned failover to its replica (F13), the migration of the
// lock's slot to another master (F14, cluster only), or a SIGKILL of the
// master, which its replica replaces, and its restart, after which it
// rejoins as a replica (F15). The fault ends when every node routes the
// slot to its new master (behind sentinels: when they agree on the new
// primary) and, for F15, the killed master is back as a replica in sync.
// Before the holder goes on, every replica is in sync again, so that the
// next failover finds one to promote.
func (r *run) failover(s *seat, k string) {
	g, ok := r.park(s)
	if !ok {
		return
	}
	budget := topologyBudget
	if k == "F15" {
		budget *= 2 // a kill, a failover, a restart and a resync
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	res := slots[g].res
	f := Fault{Kind: k, Sub: r.tp.kind, Global: true, W: s.p.id, G: g, R: res, Start: Now()}
	var err error
	switch k {
	case "F13":
		err = r.plannedFailover(ctx, layout.Slot(res))
	case "F14":
		err = r.migrate(ctx, layout.Slot(res))
	case "F15":
		err = r.killMaster(ctx, layout.Slot(res))
	}
	f.End = Now()
	r.record(f)
	if err != nil {
		r.t.Errorf("%s on %s: %v", k, res, err)
	}
	if err := r.tp.settle(ctx); err != nil {
		r.t.Errorf("after %s: %v", k, err)
	}
	r.unpark(s, g)
}

func (r *run) plannedFailover(ctx context.Context, slot uint16) error {
	if r.tp.cluster != nil {
		_, err := r.tp.cluster.Failover(ctx, slot)
		return err
	}
	_, err := r.tp.sentinel.Failover(ctx)
	return err
}

// migrate moves slot to a master other than its own, picked at random.
func (r *run) migrate(ctx context.Context, slot uint16) error {
	from, err := r.tp.cluster.MasterForSlot(ctx, slot)
	if err != nil {
		return err
	}
	var others []string
	for _, m := range r.tp.masters(ctx) {
		if m != from {
			others = append(others, m)
		}
	}
	if len(others) == 0 {
		return nil
	}
	to := others[r.rng.IntN(len(others))]
	if err := r.tp.cluster.MigrateSlot(ctx, slot, to); err != nil {
		return err
	}
	_, err = r.tp.cluster.WaitRouted(ctx, slot, from)
	return err
}

// killMaster kills the master that serves slot, waits for its replacement,
// and brings it back, to rejoin as a replica.
func (r *run) killMaster(ctx context.Context, slot uint16) error {
	var old string
	var srv *redisserver.Server
	var err error
	if r.tp.cluster != nil {
		old, err = r.tp.cluster.MasterForSlot(ctx, slot)
		srv = r.tp.cluster.ServerAt(old)
	} else {
		old, err = r.tp.sentinel.PrimaryAddr(ctx)
		srv = r.tp.sentinel.ServerAt(old)
	}
	if err != nil {
		return err
	}
	if srv == nil {
		return fmt.Errorf("no server at %s", old)
	}
	if err := srv.Kill(); err != nil {
		return err
	}
	if r.tp.cluster != nil {
		_, err = r.tp.cluster.WaitRouted(ctx, slot, old)
	} else {
		_, err = r.tp.sentinel.WaitPrimary(ctx, old)
	}
	if err != nil {
		return err
	}
	if err := srv.Restart(); err != nil {
		return err
	}
	if r.tp.sentinel == nil {
		return redisserver.WaitReplica(ctx, old)
	}
	// A sentinel turns a returning old primary into a replica only after it
	// has reported itself a primary for 8 s (four publish periods), seen at
	// an INFO every 10 s: under load that can take most of the budget. Past
	// rejoinWait the harness does what an operator would, REPLICAOF.
	wctx, cancel := context.WithTimeout(ctx, rejoinWait)
	err = redisserver.WaitReplica(wctx, old)
	cancel()
	if err == nil || ctx.Err() != nil {
		return err
	}
	primary, err := r.tp.sentinel.PrimaryAddr(ctx)
	if err != nil {
		return err
	}
	host, port, _ := strings.Cut(primary, ":")
	if err := redisserver.Run(ctx, old, "REPLICAOF", host, port); err != nil {
		return err
	}
	return redisserver.WaitReplica(ctx, old)
}

// rejoinWait is how long F15 waits behind sentinels for the killed primary
// to rejoin as a replica by itself.
const rejoinWait = 12 * time.Second

// cutReplica injects F16: a replica of a master (on a cluster, of a random
// one) stops answering for two leases, then resyncs.
func (r *run) cutReplica() {
	ctx, cancel := context.WithTimeout(context.Background(), topologyBudget)
	defer cancel()
	if err := r.tp.settle(ctx); err != nil {
		r.t.Errorf("before F16: %v", err)
	}
	var replicas []*redisserver.Server
	for _, n := range r.tp.nodes() {
		if role, _, err := redisserver.Role(ctx, n.Addr); err == nil && role == "slave" {
			replicas = append(replicas, n)
		}
	}
	if len(replicas) == 0 {
		r.t.Errorf("F16: no replica")
		return
	}
	replica := replicas[r.rng.IntN(len(replicas))]
	f := Fault{Kind: "F16", Sub: r.tp.kind + " " + replica.Addr, W: -1, G: -1, Start: Now()}
	if err := replica.Pause(); err != nil {
		r.t.Errorf("F16: %v", err)
		return
	}
	time.Sleep(2 * r.lease)
	err := replica.Resume()
	f.End = Now()
	r.record(f)
	if err != nil {
		r.t.Errorf("F16: %v", err)
	}
	if err := r.tp.settle(ctx); err != nil {
		r.t.Errorf("after F16: %v", err)
	}
}
