package redisserver_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/go-redisync/redisync/internal/redisserver"
)

// The tests use plain testing rather than testify: testify's YAML dependency
// has no go.sum entry in this module.

// TestMain fails the package if any test leaves goroutines behind, which
// guards the promise that servers and helper clients are cleaned up.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// must fails the test immediately on a non-nil error.
func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func TestServerBinaryMissing(t *testing.T) {
	t.Setenv("REDIS_SERVER_BIN", "/nonexistent")
	if _, err := redisserver.ServerBinary(); !errors.Is(err, redisserver.ErrNoServer) {
		t.Fatalf("ServerBinary() error = %v, want ErrNoServer", err)
	}
}

func TestFreePort(t *testing.T) {
	port, err := redisserver.FreePort()
	must(t, err, "FreePort")
	if port <= 0 {
		t.Fatalf("FreePort() = %d", port)
	}
}

func TestNodeForSlot(t *testing.T) {
	c := &redisserver.Cluster{Nodes: []*redisserver.Server{{Port: 1}, {Port: 2}, {Port: 3}}}
	for slot, want := range map[uint16]int{0: 1, 5460: 1, 5461: 2, 10921: 2, 10922: 3, 16383: 3} {
		if got := c.NodeForSlot(slot); got == nil || got.Port != want {
			t.Errorf("NodeForSlot(%d) = %v, want node with port %d", slot, got, want)
		}
	}
	if got := c.NodeForSlot(16384); got != nil {
		t.Errorf("NodeForSlot(16384) = %v, want nil", got)
	}
}

func TestStandalone(t *testing.T) {
	tgt, err := redisserver.StartStandalone()
	must(t, err, "StartStandalone")
	t.Cleanup(func() { _ = tgt.Stop() })
	t.Logf("real=%v addrs=%v", tgt.Real(), tgt.Addrs)

	ctx := context.Background()
	client, err := tgt.NewClient()
	must(t, err, "NewClient")
	must(t, client.Do(ctx, client.B().Set().Key("k").Value("v").Build()).Error(), "SET")
	got, err := client.Do(ctx, client.B().Get().Key("k").Build()).ToString()
	must(t, err, "GET")
	if got != "v" {
		t.Fatalf("GET k = %q, want v", got)
	}

	// TTLs must run on the wall clock for real servers and miniredis alike.
	must(t, client.Do(ctx, client.B().Set().Key("ttl").Value("v").Px(50*time.Millisecond).Build()).Error(), "SET PX")
	time.Sleep(100 * time.Millisecond)
	if err := client.Do(ctx, client.B().Get().Key("ttl").Build()).Error(); !rueidis.IsRedisNil(err) {
		t.Fatalf("GET after expiry: %v, want nil reply", err)
	}
	client.Close()

	if tgt.Real() {
		addr := tgt.Server.Addr
		must(t, tgt.Server.Restart(), "Restart")
		if tgt.Server.Addr != addr {
			t.Fatalf("Restart moved the server from %s to %s", addr, tgt.Server.Addr)
		}
		client, err = tgt.NewClient()
		must(t, err, "NewClient after restart")
		err = client.Do(ctx, client.B().Get().Key("k").Build()).Error()
		client.Close()
		if !rueidis.IsRedisNil(err) {
			t.Fatalf("GET after restart: %v, want nil reply (no persistence)", err)
		}
	}

	must(t, tgt.Stop(), "Stop")
	if tgt.Real() {
		if _, err := os.Stat(tgt.Server.Dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("server dir left behind: %v", err)
		}
	}
}

func TestCluster(t *testing.T) {
	tgt, err := redisserver.StartClusterTarget(3, 0)
	if errors.Is(err, redisserver.ErrNoServer) && !redisserver.RequireServer() {
		t.Skip(err.Error())
	}
	must(t, err, "StartClusterTarget")
	t.Cleanup(func() { _ = tgt.Stop() })
	if !tgt.Real() {
		t.Fatal("cluster target is not real")
	}

	ctx := context.Background()
	client, err := tgt.NewClient()
	must(t, err, "NewClient")
	t.Cleanup(client.Close) // runs before tgt.Stop, so no refresh chases dead nodes
	if mode := client.Mode(); mode != rueidis.ClientModeCluster {
		t.Fatalf("client mode = %s, want %s", mode, rueidis.ClientModeCluster)
	}

	// Write keys until every node has received one, then read each back
	// directly from the node NodeForSlot names: a wrong node would answer
	// with a MOVED error.
	hit := make(map[*redisserver.Server]string)
	for i := 0; len(hit) < len(tgt.Cluster.Nodes); i++ {
		if i == 1000 {
			t.Fatalf("keys reached only %d nodes", len(hit))
		}
		key := fmt.Sprintf("key-%d", i)
		slot, err := client.Do(ctx, client.B().ClusterKeyslot().Key(key).Build()).AsInt64()
		must(t, err, "CLUSTER KEYSLOT")
		must(t, client.Do(ctx, client.B().Set().Key(key).Value(key).Build()).Error(), "SET "+key)
		node := tgt.Cluster.NodeForSlot(uint16(slot))
		if node == nil {
			t.Fatalf("no node for slot %d", slot)
		}
		if _, ok := hit[node]; !ok {
			hit[node] = key
		}
	}
	for node, key := range hit {
		direct, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress: []string{node.Addr}, ForceSingleClient: true, DisableCache: true,
		})
		must(t, err, "connect to "+node.Addr)
		got, err := direct.Do(ctx, direct.B().Get().Key(key).Build()).ToString()
		direct.Close()
		must(t, err, "GET "+key+" on "+node.Addr)
		if got != key {
			t.Fatalf("GET %s on %s = %q", key, node.Addr, got)
		}
	}

	client.Close()
	must(t, tgt.Stop(), "Stop")
}
