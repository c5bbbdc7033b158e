package redisserver

import (
	"crypto/fips140"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/rueidis"
)

// Target is what a test talks to: a real server or, without a binary, miniredis.
type Target struct {
	// Addrs are the addresses clients should connect to.
	Addrs []string
	// Mini is the in-process fallback server; nil for real servers.
	Mini *miniredis.Miniredis
	// Server is the standalone real server, else nil.
	Server *Server
	// Cluster is the real cluster, else nil.
	Cluster *Cluster
	// Sentinel is the real primary, replica and sentinels, else nil.
	Sentinel *SentinelSet
}

// StartStandalone starts a real standalone redis-server, with args, if a
// binary is available. Otherwise it falls back to miniredis (args unused),
// unless RequireServer demands a real server, in which case it fails.
func StartStandalone(args ...string) (*Target, error) {
	if _, err := ServerBinary(); err != nil {
		if RequireServer() {
			return nil, requireError(err)
		}
		mr := miniredis.NewMiniRedis()
		// Lock-style tests rely on keys expiring in real time, which
		// miniredis only does with ClockTTL; by default TTLs wait for
		// FastForward.
		mr.ClockTTL(true)
		// miniredis names scripts by their SHA-1, which FIPS 140-only
		// mode (GODEBUG=fips140=only) refuses: its goroutines, started
		// here, run without enforcement, the library's own do not.
		var err error
		fips140.WithoutEnforcement(func() { err = mr.Start() })
		if err != nil {
			return nil, fmt.Errorf("redisserver: start miniredis: %w", err)
		}
		// ROLE, which miniredis lacks, answers as a primary without
		// replicas does (its WAIT answers 0 at once, as such a primary's).
		if err := mr.Server().Register("ROLE", func(c *server.Peer, _ string, _ []string) {
			c.WriteLen(3)
			c.WriteBulk("master")
			c.WriteInt(0)
			c.WriteLen(0)
		}); err != nil {
			return nil, fmt.Errorf("redisserver: miniredis ROLE: %w", err)
		}
		return &Target{Addrs: []string{mr.Addr()}, Mini: mr}, nil
	}
	s, err := StartServer(args...)
	if err != nil {
		return nil, err
	}
	return &Target{Addrs: []string{s.Addr}, Server: s}, nil
}

// StartClusterTarget starts a real cluster of masters nodes, with replicas
// replicas each (0 or 1). There is no miniredis fallback for clusters:
// without a binary the error wraps ErrNoServer, and callers should skip
// unless RequireServer is true.
func StartClusterTarget(masters, replicas int) (*Target, error) {
	if _, err := ServerBinary(); err != nil {
		if RequireServer() {
			return nil, requireError(err)
		}
		return nil, err
	}
	start := StartCluster
	if replicas > 0 {
		start = StartClusterWithReplicas
	}
	c, err := start(masters)
	if err != nil {
		return nil, err
	}
	return &Target{Addrs: append([]string(nil), c.Addrs...), Cluster: c}, nil
}

// StartSentinelTarget starts a primary, a replica and three sentinels. As for
// clusters there is no miniredis fallback: without a binary the error wraps
// ErrNoServer.
func StartSentinelTarget() (*Target, error) {
	if _, err := ServerBinary(); err != nil {
		if RequireServer() {
			return nil, requireError(err)
		}
		return nil, err
	}
	ss, err := StartSentinelSet()
	if err != nil {
		return nil, err
	}
	return &Target{Addrs: append([]string(nil), ss.Addrs...), Sentinel: ss}, nil
}

// Real reports whether the target is a real redis-server rather than
// miniredis, for tests of behaviour miniredis does not emulate.
func (t *Target) Real() bool {
	return t.Mini == nil
}

// ClientOption returns rueidis options suited to the target. Client-side
// caching is off so tests observe the server directly; a write timeout makes
// a stopped or killed server surface as an error rather than a hang.
func (t *Target) ClientOption() rueidis.ClientOption {
	addrs := append([]string(nil), t.Addrs...)
	switch {
	case t.Mini != nil:
		// miniredis needs RESP2 to serve Pub/Sub on a shared client.
		return rueidis.ClientOption{
			InitAddress:       addrs,
			DisableCache:      true,
			ForceSingleClient: true,
			AlwaysRESP2:       true,
		}
	case t.Sentinel != nil:
		// Clients find the primary through the sentinels; the periodic
		// refresh recovers from a missed +switch-master event.
		return rueidis.ClientOption{
			InitAddress:      addrs,
			DisableCache:     true,
			AlwaysPipelining: true,
			ConnWriteTimeout: 3 * time.Second,
			Sentinel: rueidis.SentinelOption{
				MasterSet:               MasterSet,
				TopologyRefreshInterval: time.Second,
			},
		}
	case t.Cluster != nil:
		// Without ForceSingleClient rueidis detects cluster mode itself.
		// One seed address is enough, since the client learns every node
		// from CLUSTER SLOTS. Passing several races rueidis' parallel seed
		// dials against its first topology refresh, and the loser's
		// connections are closed by a goroutine that sleeps 5 s first,
		// which goleak reports as a leak.
		return rueidis.ClientOption{
			InitAddress:      addrs[:1],
			DisableCache:     true,
			AlwaysPipelining: true,
			ConnWriteTimeout: 3 * time.Second,
		}
	default:
		return rueidis.ClientOption{
			InitAddress:       addrs,
			DisableCache:      true,
			ForceSingleClient: true,
			AlwaysPipelining:  true,
			ConnWriteTimeout:  3 * time.Second,
		}
	}
}

// NewClient connects a rueidis client using ClientOption. The caller closes it.
func (t *Target) NewClient() (rueidis.Client, error) {
	return rueidis.NewClient(t.ClientOption())
}

// Stop shuts down whatever the target holds. Calling it again is harmless.
func (t *Target) Stop() error {
	var errs []error
	if t.Mini != nil {
		t.Mini.Close()
	}
	if t.Server != nil {
		errs = append(errs, t.Server.Stop())
	}
	if t.Cluster != nil {
		errs = append(errs, t.Cluster.Stop())
	}
	if t.Sentinel != nil {
		errs = append(errs, t.Sentinel.Stop())
	}
	return errors.Join(errs...)
}
