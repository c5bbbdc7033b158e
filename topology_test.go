package redisync_test

import (
	"context"
	"sync"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync/internal/redisserver"
)

// A topology is a way of deploying Redis that every primitive's suite runs
// on: a standalone server, a 3-master cluster with a replica each (sharded
// Pub/Sub), and a primary and replica behind three sentinels.
type topology struct {
	name  string
	start func() (*redisserver.Target, error)

	once sync.Once
	tg   *redisserver.Target
	err  error
}

var topologies = []*topology{
	{name: "standalone", start: func() (*redisserver.Target, error) { return standalone, nil }},
	{name: "cluster", start: func() (*redisserver.Target, error) { return redisserver.StartClusterTarget(3, 1) }},
	{name: "sentinel", start: redisserver.StartSentinelTarget},
}

// target returns the topology's shared servers, started on first use. Without
// a redis-server binary the cluster and sentinel skip, naming the install
// command, unless REDISYNC_REQUIRE_SERVER=1.
func (tp *topology) target(t *testing.T) *redisserver.Target {
	t.Helper()
	tp.once.Do(func() { tp.tg, tp.err = tp.start() })
	if tp.err != nil {
		if !redisserver.RequireServer() {
			t.Skip(tp.err.Error())
		}
		t.Fatal(tp.err)
	}
	return tp.tg
}

// stopTopologies stops the servers the topologies started.
func stopTopologies() {
	for _, tp := range topologies[1:] {
		if tp.tg != nil {
			_ = tp.tg.Stop()
		}
	}
}

// forEachTopology runs test once per topology, as subtests.
func forEachTopology(t *testing.T, test func(t *testing.T, tg *redisserver.Target)) {
	for _, tp := range topologies {
		t.Run(tp.name, func(t *testing.T) { test(t, tp.target(t)) })
	}
}

// forEachTopologyAtOnce runs test once per topology, as parallel subtests:
// for the long hammers (tens of seconds each), whose three runs, one after
// the other, were the longest stretch of the package's parallel tests.
func forEachTopologyAtOnce(t *testing.T, test func(t *testing.T, tg *redisserver.Target)) {
	for _, tp := range topologies {
		t.Run(tp.name, func(t *testing.T) {
			t.Parallel() // each waits, mostly, for its own Clients: see redistest.Parallel
			test(t, tp.target(t))
		})
	}
}

// clusterTarget returns the shared cluster.
func clusterTarget(t *testing.T) *redisserver.Target { return topologies[1].target(t) }

// spread returns names to exercise every node of tg: one per master on a
// cluster, else just prefix.
func spread(t *testing.T, tg *redisserver.Target, prefix string) []string {
	if tg.Cluster == nil {
		return []string{prefix}
	}
	return namesOnEveryMaster(t, tg, prefix, 1)
}

// subscribers returns how many connections are subscribed to channel across
// tg's nodes: shard channels on a cluster, plain channels elsewhere.
func subscribers(t *testing.T, tg *redisserver.Target, channel string) int64 {
	rc := newRueidis(t, tg)
	var n int64
	for _, node := range rc.Nodes() {
		cmd := node.B().PubsubNumsub().Channel(channel).Build()
		if tg.Cluster != nil {
			cmd = node.B().PubsubShardnumsub().Channel(channel).Build()
		}
		counts, err := node.Do(context.Background(), cmd).AsIntMap()
		require.NoError(t, err)
		n += counts[channel]
	}
	return n
}

// subscribe starts receiving the messages of channel on rc, with SSUBSCRIBE
// on a cluster; stop ends it.
func subscribe(t *testing.T, rc rueidis.Client, channel string, fn func(rueidis.PubSubMessage)) (stop func()) {
	cmd := rc.B().Subscribe().Channel(channel).Build()
	if rc.Mode() == rueidis.ClientModeCluster {
		cmd = rc.B().Ssubscribe().Channel(channel).Build()
	}
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	ctx = rueidis.WithOnSubscriptionHook(ctx, func(rueidis.PubSubSubscription) {
		select {
		case <-ready:
		default:
			close(ready)
		}
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = rc.Receive(ctx, cmd, fn)
	}()
	select {
	case <-ready:
	case <-done:
		t.Fatal("subscription failed")
	}
	return func() {
		cancel()
		<-done
	}
}

// publishCommand is the publish command of tg's primitives' scripts.
func publishCommand(tg *redisserver.Target) string {
	if tg.Cluster != nil {
		return "spublish"
	}
	return "publish"
}

// ownCluster starts a cluster of 3 masters with a replica each for t alone
// (a test that kills or fails over its nodes), stopped when t ends.
func ownCluster(t *testing.T) *redisserver.Target {
	t.Helper()
	tg, err := redisserver.StartClusterTarget(3, 1)
	if err != nil {
		if !redisserver.RequireServer() {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tg.Stop() })
	return tg
}
