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

const (
	// clusterSlots is the number of hash slots in a Redis Cluster.
	clusterSlots = 16384
	// clusterFormTimeout bounds how long the nodes may take to agree.
	clusterFormTimeout = 20 * time.Second
)

// Cluster is a Redis Cluster on loopback: masters each owning one contiguous,
// evenly sized range of hash slots, and optionally replicas.
type Cluster struct {
	// Nodes are the cluster's masters as started; node i owned the i-th slot
	// range at the start (a failover or a migration changes that).
	Nodes []*Server
	// Addrs are the masters' addresses, in the same order as Nodes.
	Addrs []string
	// Replicas are the replicas; Replicas[i] replicated Nodes[i] at the start.
	Replicas []*Server
}

// StartCluster starts masters cluster nodes (at least one), splits the hash
// slots evenly among them and waits until every node reports a healthy
// cluster with the complete slot map, so a cluster client connecting right
// afterwards sees all slots served.
func StartCluster(masters int) (*Cluster, error) {
	if masters < 1 {
		return nil, fmt.Errorf("redisserver: cluster needs at least one master, got %d", masters)
	}
	c := &Cluster{}
	for range masters {
		s, err := startServer(freeClusterPort, clusterNodeArgs)
		if err != nil {
			return nil, errors.Join(err, c.Stop())
		}
		c.Nodes = append(c.Nodes, s)
		c.Addrs = append(c.Addrs, s.Addr)
	}
	if err := c.form(); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	return c, nil
}

// Stop stops every node and removes their directories.
func (c *Cluster) Stop() error {
	var errs []error
	for _, s := range append(c.Nodes, c.Replicas...) {
		errs = append(errs, s.Stop())
	}
	return errors.Join(errs...)
}

// NodeForSlot returns the node that owns slot under the even split made by
// StartCluster, or nil if slot is not a valid hash slot.
func (c *Cluster) NodeForSlot(slot uint16) *Server {
	for i, s := range c.Nodes {
		start, end := slotRange(i, len(c.Nodes))
		if int(slot) >= start && int(slot) <= end {
			return s
		}
	}
	return nil
}

// slotRange returns the inclusive slot range of node i out of n.
func slotRange(i, n int) (start, end int) {
	return i * clusterSlots / n, (i+1)*clusterSlots/n - 1
}

// form assigns the slot ranges, introduces the nodes to each other and waits
// for the cluster to converge. It talks to every node through its own
// single-node client, since a cluster client cannot start before the slots
// are assigned.
func (c *Cluster) form() error {
	ctx, cancel := context.WithTimeout(context.Background(), clusterFormTimeout)
	defer cancel()
	clients := make([]rueidis.Client, 0, len(c.Nodes))
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	for _, addr := range c.Addrs {
		cl, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress:       []string{addr},
			ForceSingleClient: true,
			DisableCache:      true,
		})
		if err != nil {
			return fmt.Errorf("redisserver: connect to cluster node %s: %w", addr, err)
		}
		clients = append(clients, cl)
	}

	for i, cl := range clients {
		start, end := slotRange(i, len(clients))
		// Distinct config epochs spare the nodes the collision resolution
		// they would otherwise run, as redis-cli --cluster create does.
		cmds := rueidis.Commands{
			cl.B().ClusterSetConfigEpoch().ConfigEpoch(int64(i + 1)).Build(),
			cl.B().ClusterAddslotsrange().StartSlotEndSlot().StartSlotEndSlot(int64(start), int64(end)).Build(),
		}
		for _, resp := range cl.DoMulti(ctx, cmds...) {
			if err := resp.Error(); err != nil {
				return fmt.Errorf("redisserver: assign slots %d-%d to %s: %w", start, end, c.Addrs[i], err)
			}
		}
	}
	for _, s := range c.Nodes[1:] {
		meet := clients[0].B().ClusterMeet().Ip("127.0.0.1").Port(int64(s.Port)).Build()
		if err := clients[0].Do(ctx, meet).Error(); err != nil {
			return fmt.Errorf("redisserver: CLUSTER MEET %s: %w", s.Addr, err)
		}
	}

	for {
		pending, err := c.pending(ctx, clients)
		if err == nil && pending == "" {
			return nil
		}
		if err != nil {
			pending = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redisserver: cluster did not converge within %v: %s", clusterFormTimeout, pending)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// pending describes the first node that does not yet see the finished
// cluster, or returns "" once all of them do.
func (c *Cluster) pending(ctx context.Context, clients []rueidis.Client) (string, error) {
	want := map[string]string{
		"cluster_state":          "ok",
		"cluster_known_nodes":    strconv.Itoa(len(clients)),
		"cluster_slots_assigned": strconv.Itoa(clusterSlots),
	}
	for i, cl := range clients {
		info, err := cl.Do(ctx, cl.B().ClusterInfo().Build()).ToString()
		if err != nil {
			return "", fmt.Errorf("CLUSTER INFO on %s: %w", c.Addrs[i], err)
		}
		fields := parseInfo(info)
		for k, v := range want {
			if fields[k] != v {
				return fmt.Sprintf("%s has %s:%s, want %s", c.Addrs[i], k, fields[k], v), nil
			}
		}
		// CLUSTER INFO can turn ok before the node has learned who serves
		// every range, and CLUSTER SLOTS is what cluster clients read.
		slots, err := cl.Do(ctx, cl.B().ClusterSlots().Build()).ToArray()
		if err != nil {
			return "", fmt.Errorf("CLUSTER SLOTS on %s: %w", c.Addrs[i], err)
		}
		if missing := missingRanges(slots, len(clients)); missing != "" {
			return fmt.Sprintf("%s lacks slot ranges %s", c.Addrs[i], missing), nil
		}
	}
	return "", nil
}

// parseInfo splits a "key:value" per line reply into a map. Over RESP3 the
// reply is a verbatim string that rueidis returns with its "txt:" format
// prefix, which would otherwise glue onto the first key.
func parseInfo(info string) map[string]string {
	info = strings.TrimPrefix(info, "txt:")
	fields := make(map[string]string)
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	return fields
}

// missingRanges lists the expected slot ranges of an n-node cluster that a
// CLUSTER SLOTS reply does not contain, or returns "" if all are present.
func missingRanges(slots []rueidis.RedisMessage, n int) string {
	seen := make(map[[2]int64]bool)
	for _, entry := range slots {
		fields, err := entry.ToArray()
		if err != nil || len(fields) < 3 {
			continue
		}
		start, err1 := fields[0].AsInt64()
		end, err2 := fields[1].AsInt64()
		if err1 == nil && err2 == nil {
			seen[[2]int64{start, end}] = true
		}
	}
	var missing []string
	for i := range n {
		start, end := slotRange(i, n)
		if !seen[[2]int64{int64(start), int64(end)}] {
			missing = append(missing, fmt.Sprintf("%d-%d", start, end))
		}
	}
	return strings.Join(missing, ",")
}
