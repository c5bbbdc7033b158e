package redisserver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// clusterNodeArgs start a server as a cluster node; a short node timeout
// keeps failure detection quick in tests, and replicas sync at once instead
// of after diskless sync's default 5 s delay.
var clusterNodeArgs = []string{
	"--cluster-enabled", "yes",
	"--cluster-config-file", "nodes.conf",
	"--cluster-node-timeout", "2000",
	"--repl-diskless-sync-delay", "0",
}

// StartClusterWithReplicas starts a cluster of masters masters with one
// replica each, and waits until every replica is in sync with its master.
func StartClusterWithReplicas(masters int) (*Cluster, error) {
	c, err := StartCluster(masters)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterFormTimeout)
	defer cancel()
	for range c.Nodes {
		r, err := startServer(freeClusterPort, clusterNodeArgs)
		if err != nil {
			return nil, errors.Join(err, c.Stop())
		}
		c.Replicas = append(c.Replicas, r)
		if _, err := nodeDo(ctx, c.Addrs[0], "CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(r.Port)); err != nil {
			return nil, errors.Join(err, c.Stop())
		}
	}
	for i, r := range c.Replicas {
		if err := replicate(ctx, r, c.Nodes[i]); err != nil {
			return nil, errors.Join(err, c.Stop())
		}
	}
	for _, r := range c.Replicas {
		if err := waitFor(ctx, "replica "+r.Addr+" in sync", func() (bool, error) {
			info, err := nodeDo(ctx, r.Addr, "INFO", "replication")
			return strings.Contains(info, "master_link_status:up"), err
		}); err != nil {
			return nil, errors.Join(err, c.Stop())
		}
	}
	total := strconv.Itoa(2 * masters)
	for _, n := range append(c.Nodes, c.Replicas...) {
		if err := waitFor(ctx, n.Addr+" knows every node", func() (bool, error) {
			info, err := nodeDo(ctx, n.Addr, "CLUSTER", "INFO")
			return parseInfo(info)["cluster_known_nodes"] == total, err
		}); err != nil {
			return nil, errors.Join(err, c.Stop())
		}
	}
	return c, nil
}

// replicate makes r, which has met the cluster, a replica of master m.
func replicate(ctx context.Context, r, m *Server) error {
	id, err := nodeDo(ctx, m.Addr, "CLUSTER", "MYID")
	if err != nil {
		return err
	}
	// The replica must have learned of its master through gossip first.
	return waitFor(ctx, r.Addr+" replicates "+m.Addr, func() (bool, error) {
		_, err := nodeDo(ctx, r.Addr, "CLUSTER", "REPLICATE", id)
		return err == nil, nil
	})
}

// MasterForSlot returns the address of the master that serves slot now, as
// the first node of the cluster reports it.
func (c *Cluster) MasterForSlot(ctx context.Context, slot uint16) (string, error) {
	return withNode(ctx, c.Addrs[0], func(cl rueidis.Client) (string, error) {
		return masterForSlot(ctx, cl, slot)
	})
}

func masterForSlot(ctx context.Context, cl rueidis.Client, slot uint16) (string, error) {
	slots, err := cl.Do(ctx, cl.B().ClusterSlots().Build()).ToArray()
	if err != nil {
		return "", err
	}
	for _, entry := range slots {
		f, err := entry.ToArray()
		if err != nil || len(f) < 3 {
			continue
		}
		start, _ := f[0].AsInt64()
		end, _ := f[1].AsInt64()
		if int64(slot) < start || int64(slot) > end {
			continue
		}
		node, err := f[2].ToArray()
		if err != nil || len(node) < 2 {
			return "", fmt.Errorf("bad CLUSTER SLOTS entry")
		}
		host, _ := node[0].ToString()
		port, _ := node[1].AsInt64()
		return host + ":" + strconv.FormatInt(port, 10), nil
	}
	return "", fmt.Errorf("slot %d is not served", slot)
}

// Failover promotes the replica of the master that serves slot with a manual
// CLUSTER FAILOVER (which waits for the replica to catch up, so no
// acknowledged write is lost) and waits until every node routes the slot to
// it. It returns the new master's address.
func (c *Cluster) Failover(ctx context.Context, slot uint16) (string, error) {
	old, err := c.MasterForSlot(ctx, slot)
	if err != nil {
		return "", err
	}
	oldID, err := nodeDo(ctx, old, "CLUSTER", "MYID")
	if err != nil {
		return "", err
	}
	var replica string
	for _, n := range append(c.Nodes, c.Replicas...) {
		info, err := nodeDo(ctx, n.Addr, "INFO", "replication")
		if err == nil && strings.Contains(info, "role:slave") &&
			strings.Contains(info, "master_port:"+old[strings.LastIndexByte(old, ':')+1:]) {
			replica = n.Addr
		}
	}
	if replica == "" {
		return "", fmt.Errorf("redisserver: no replica of %s (%s)", old, oldID)
	}
	if _, err := nodeDo(ctx, replica, "CLUSTER", "FAILOVER"); err != nil {
		return "", fmt.Errorf("redisserver: CLUSTER FAILOVER on %s: %w", replica, err)
	}
	asked := time.Now()
	err = waitFor(ctx, "every node routes slot "+strconv.Itoa(int(slot))+" to "+replica, func() (bool, error) {
		if time.Since(asked) > manualFailoverTimeout {
			// A manual failover that the replica could not finish in time
			// (it must catch up with a master under load first) is
			// abandoned by Redis, and nothing moves: ask again.
			if _, err := nodeDo(ctx, replica, "CLUSTER", "FAILOVER"); err == nil {
				asked = time.Now()
			}
		}
		for _, n := range append(c.Nodes, c.Replicas...) {
			addr, err := withNode(ctx, n.Addr, func(cl rueidis.Client) (string, error) {
				return masterForSlot(ctx, cl, slot)
			})
			if err != nil || addr != replica {
				return false, nil
			}
		}
		return true, nil
	})
	return replica, err
}

// manualFailoverTimeout is how long Failover waits for a CLUSTER FAILOVER
// before it asks again: Redis abandons a manual failover after 5 s
// (CLUSTER_MF_TIMEOUT).
const manualFailoverTimeout = 6 * time.Second

// MigrateSlot moves slot, with its keys, from the master that serves it to the
// master at to, the way redis-cli --cluster reshard does: IMPORTING and
// MIGRATING, MIGRATE of the keys in batches, then SETSLOT NODE everywhere.
// Clients keep working throughout, following ASK and then MOVED.
func (c *Cluster) MigrateSlot(ctx context.Context, slot uint16, to string) error {
	from, toID, err := c.BeginMigration(ctx, slot, to)
	if err != nil || from == to {
		return err
	}
	s := strconv.Itoa(int(slot))
	host, port, _ := strings.Cut(to, ":")
	for {
		keys, err := nodeList(ctx, from, "CLUSTER", "GETKEYSINSLOT", s, "100")
		if err != nil {
			return err
		}
		if len(keys) == 0 {
			break
		}
		args := append([]string{"MIGRATE", host, port, "", "0", "5000", "REPLACE", "KEYS"}, keys...)
		if _, err := nodeDo(ctx, from, args...); err != nil {
			return fmt.Errorf("redisserver: MIGRATE slot %d: %w", slot, err)
		}
	}
	for _, n := range []string{to, from} {
		if _, err := nodeDo(ctx, n, "CLUSTER", "SETSLOT", s, "NODE", toID); err != nil {
			return err
		}
	}
	for _, n := range c.Addrs {
		_, _ = nodeDo(ctx, n, "CLUSTER", "SETSLOT", s, "NODE", toID) // the others learn it by gossip too
	}
	return nil
}

// BeginMigration marks slot as moving from the master that serves it, which
// it returns, to the master at to (IMPORTING there, MIGRATING here), and
// returns to's node ID. Until MigrateSlot finishes the move, the source
// answers ASK to a command whose keys it does not have.
func (c *Cluster) BeginMigration(ctx context.Context, slot uint16, to string) (from, toID string, err error) {
	if from, err = c.MasterForSlot(ctx, slot); err != nil || from == to {
		return from, "", err
	}
	fromID, err := nodeDo(ctx, from, "CLUSTER", "MYID")
	if err != nil {
		return "", "", err
	}
	if toID, err = nodeDo(ctx, to, "CLUSTER", "MYID"); err != nil {
		return "", "", err
	}
	s := strconv.Itoa(int(slot))
	if _, err := nodeDo(ctx, to, "CLUSTER", "SETSLOT", s, "IMPORTING", fromID); err != nil {
		return "", "", err
	}
	_, err = nodeDo(ctx, from, "CLUSTER", "SETSLOT", s, "MIGRATING", toID)
	return from, toID, err
}

// nodeDo sends one command to the node at addr and returns its reply as text.
func nodeDo(ctx context.Context, addr string, args ...string) (string, error) {
	return withNode(ctx, addr, func(cl rueidis.Client) (string, error) {
		reply, err := cl.Do(ctx, cl.B().Arbitrary(args...).Build()).ToString()
		return strings.TrimPrefix(reply, "txt:"), err
	})
}

// nodeList sends one command with an array reply to the node at addr.
func nodeList(ctx context.Context, addr string, args ...string) ([]string, error) {
	var list []string
	_, err := withNode(ctx, addr, func(cl rueidis.Client) (string, error) {
		var err error
		list, err = cl.Do(ctx, cl.B().Arbitrary(args...).Build()).AsStrSlice()
		return "", err
	})
	return list, err
}

// waitFor polls cond until it holds or ctx ends.
func waitFor(ctx context.Context, what string, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redisserver: waiting for %s: %w (last error: %v)", what, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
