package redisserver

import (
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/redis/rueidis"
)

var errNotRunning = errors.New("redisserver: the server is not running")

// Run sends one command to the server at addr on a short-lived connection,
// for tests that drive a node directly, and returns its error.
func Run(ctx context.Context, addr string, args ...string) error {
	_, err := withNode(ctx, addr, func(cl rueidis.Client) (string, error) {
		return "", cl.Do(ctx, cl.B().Arbitrary(args...).Build()).Error()
	})
	return err
}

// List sends one command with an array reply to the server at addr on a
// short-lived connection.
func List(ctx context.Context, addr string, args ...string) ([]string, error) {
	return nodeList(ctx, addr, args...)
}

// Role returns what the server at addr says it is ("master" or "slave") and,
// for a replica, whether its link to its master is up and in sync.
func Role(ctx context.Context, addr string) (role string, inSync bool, err error) {
	info, err := nodeDo(ctx, addr, "INFO", "replication")
	if err != nil {
		return "", false, err
	}
	fields := parseInfo(info)
	return fields["role"], fields["master_link_status"] == "up" && fields["master_sync_in_progress"] == "0", nil
}

// WaitReplica waits until the server at addr is a replica in sync with its
// master.
func WaitReplica(ctx context.Context, addr string) error {
	return waitFor(ctx, addr+" a replica in sync", func() (bool, error) {
		role, ok, err := Role(ctx, addr)
		return role == "slave" && ok, err
	})
}

// Servers returns every node of the cluster: the masters and the replicas as
// started.
func (c *Cluster) Servers() []*Server { return append(slices.Clone(c.Nodes), c.Replicas...) }

// ServerAt returns the node listening on addr, or nil.
func (c *Cluster) ServerAt(addr string) *Server { return serverAt(c.Servers(), addr) }

// Masters returns the addresses of the nodes that are masters now.
func (c *Cluster) Masters(ctx context.Context) []string { return masters(ctx, c.Servers()) }

// WaitRouted waits until every node that answers routes slot to one master
// other than old (a failover or a migration away from old has finished),
// and returns that master's address.
func (c *Cluster) WaitRouted(ctx context.Context, slot uint16, old string) (string, error) {
	var to string
	err := waitFor(ctx, "slot "+strconv.Itoa(int(slot))+" routed away from "+old, func() (bool, error) {
		to = ""
		for _, n := range c.Servers() {
			addr, err := withNode(ctx, n.Addr, func(cl rueidis.Client) (string, error) { return masterForSlot(ctx, cl, slot) })
			switch {
			case err != nil && n.Addr == old:
			case err != nil, addr == old, to != "" && addr != to:
				return false, err
			default:
				to = addr
			}
		}
		return to != "", nil
	})
	return to, err
}

// Servers returns the data nodes of the set: the primary and the replica as
// started (a failover swaps their roles).
func (ss *SentinelSet) Servers() []*Server { return []*Server{ss.Primary, ss.Replica} }

// ServerAt returns the data node listening on addr, or nil.
func (ss *SentinelSet) ServerAt(addr string) *Server { return serverAt(ss.Servers(), addr) }

// PrimaryAddr returns the primary's address when every sentinel names the
// same one.
func (ss *SentinelSet) PrimaryAddr(ctx context.Context) (string, error) { return ss.agreedPrimary(ctx) }

// WaitPrimary waits until every sentinel names a primary other than old and
// that server answers as a master, and returns its address.
func (ss *SentinelSet) WaitPrimary(ctx context.Context, old string) (string, error) {
	var addr string
	err := waitFor(ctx, "a primary other than "+old, func() (bool, error) {
		var err error
		addr, err = ss.agreedPrimary(ctx)
		return err == nil && addr != old && ss.isPrimary(ctx, addr), err
	})
	return addr, err
}

func serverAt(servers []*Server, addr string) *Server {
	for _, s := range servers {
		if s.Addr == addr {
			return s
		}
	}
	return nil
}

// masters returns the addresses of those of servers that answer as masters.
func masters(ctx context.Context, servers []*Server) []string {
	var out []string
	for _, s := range servers {
		if role, _, err := Role(ctx, s.Addr); err == nil && role == "master" {
			out = append(out, s.Addr)
		}
	}
	return out
}

// Masters returns the addresses of the data nodes that are masters now
// (normally one; two for a moment during a failover).
func (ss *SentinelSet) Masters(ctx context.Context) []string { return masters(ctx, ss.Servers()) }

// ReplicaOf returns the server among servers that replicates the master at
// addr now, nil if none does.
func ReplicaOf(ctx context.Context, servers []*Server, addr string) *Server {
	for _, s := range servers {
		info, err := nodeDo(ctx, s.Addr, "INFO", "replication")
		if f := parseInfo(info); err == nil && f["role"] == "slave" && f["master_host"]+":"+f["master_port"] == addr {
			return s
		}
	}
	return nil
}
