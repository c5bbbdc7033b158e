package redisserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/redisserver"
)

func TestSentinelSet(t *testing.T) {
	start := time.Now()
	tg := startSentinel(t)
	t.Logf("sentinel set ready in %v", time.Since(start))
	rc, err := tg.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if rc.Mode() != rueidis.ClientModeSentinel {
		t.Fatalf("mode %s", rc.Mode())
	}
	ctx := context.Background()
	if err := rc.Do(ctx, rc.B().Set().Key("k").Value("before").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	start = time.Now()
	old := tg.Sentinel.Primary.Addr
	primary, err := tg.Sentinel.Failover(fctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("failed over to %s in %v", primary, time.Since(start))
	if primary != tg.Sentinel.Replica.Addr {
		t.Fatalf("new primary %s, want the replica %s", primary, tg.Sentinel.Replica.Addr)
	}
	// The old primary takes no more writes once Failover returns: the
	// chaos suite counts the failover's window until then.
	direct, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{old}, ForceSingleClient: true, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	if err := direct.Do(ctx, direct.B().Set().Key("k").Value("stale").Build()).Error(); err == nil {
		t.Fatalf("the old primary %s took a write after the failover returned", old)
	} else {
		t.Logf("the old primary refuses writes: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := rc.Do(ctx, rc.B().Set().Key("k").Value("after").Build()).Error()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("client did not follow the new primary: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestClusterWithReplicas(t *testing.T) {
	if _, err := redisserver.ServerBinary(); err != nil {
		t.Skip(err)
	}
	start := time.Now()
	c, err := redisserver.StartClusterWithReplicas(3)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	t.Logf("3 masters + 3 replicas ready in %v", time.Since(start))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const slot = 100
	before, err := c.MasterForSlot(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	after, err := c.Failover(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("slot %d: %s -> %s in %v", slot, before, after, time.Since(start))
	if after == before {
		t.Fatal("failover kept the master")
	}
	if err := c.MigrateSlot(ctx, slot, c.Addrs[2]); err != nil {
		t.Fatal(err)
	}
	now, err := c.MasterForSlot(ctx, slot)
	if err != nil || now != c.Addrs[2] {
		t.Fatalf("after migration slot %d is on %s (%v), want %s", slot, now, err, c.Addrs[2])
	}
}

// A failover the sentinels give up (the replica, paused here, does not
// answer as the new primary within the failover timeout) is asked for
// again once the replica is back: Failover returns the new primary.
func TestSentinelFailoverAskedAgain(t *testing.T) {
	tg := startSentinel(t)
	replica := tg.Sentinel.Replica
	if err := replica.Pause(); err != nil {
		t.Skip(err) // SIGSTOP is Linux's here
	}
	resumed := time.AfterFunc(6*time.Second, func() { _ = replica.Resume() })
	defer func() {
		if resumed.Stop() {
			_ = replica.Resume()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	primary, err := tg.Sentinel.Failover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("failed over to %s in %v, the replica paused for the first 6 s", primary, time.Since(start))
	if primary != replica.Addr {
		t.Fatalf("new primary %s, want the replica %s", primary, replica.Addr)
	}
}

// startSentinel starts a primary, its replica and three sentinels, stopped
// when t ends; it skips t on a machine without redis-server.
func startSentinel(t *testing.T) *redisserver.Target {
	t.Helper()
	tg, err := redisserver.StartSentinelTarget()
	switch {
	case err != nil && !redisserver.RequireServer():
		t.Skip(err)
	case err != nil:
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tg.Stop() })
	return tg
}
