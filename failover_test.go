package redisync_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redisserver"
)

// contention keeps clients x goroutines locking name (a FencedMutex, so that
// tokens can be checked too) until stop is called, which returns the number
// of critical sections, the most holders seen at once and the grants;
// opsSoFar counts the critical sections while it runs.
func contention(t *testing.T, tg *redisserver.Target, name string, clients, goroutines int, opts ...redisync.Option) (stop func() (ops int64, worst int32, grants []grant), opsSoFar func() int64) {
	var inside, most atomic.Int32
	var ops atomic.Int64
	var mu sync.Mutex
	var all []grant
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range clients {
		c, _ := newClient(t, tg, opts...)
		for range goroutines {
			m := c.NewFencedMutex(name)
			wg.Go(func() {
				for {
					select {
					case <-done:
						return
					default:
					}
					began := time.Now()
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					token, err := m.LockToken(ctx)
					cancel()
					if err != nil {
						t.Errorf("LockToken: %v", err)
						return
					}
					got := time.Now()
					if n := inside.Add(1); n > most.Load() {
						most.Store(n)
					}
					time.Sleep(200 * time.Microsecond)
					inside.Add(-1)
					m.Unlock()
					ops.Add(1)
					mu.Lock()
					all = append(all, grant{began: began, done: got, token: token})
					mu.Unlock()
				}
			})
		}
	}
	return func() (int64, int32, []grant) {
		close(done)
		wg.Wait()
		return ops.Load(), most.Load(), all
	}, ops.Load
}

// nodeClient returns a client of the node at addr alone, for the caller to
// close.
func nodeClient(t *testing.T, addr string) rueidis.Client {
	node, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true, DisableCache: true})
	require.NoError(t, err)
	return node
}

// shardSubscribers returns the shard subscriptions of channel on the node at
// addr, master or replica (a cluster client knows only the masters).
func shardSubscribers(t *testing.T, addr, channel string) int64 {
	node := nodeClient(t, addr)
	defer node.Close()
	n, err := node.Do(context.Background(), node.B().PubsubShardnumsub().Channel(channel).Build()).AsIntMap()
	require.NoError(t, err)
	return n[channel]
}

// A manual CLUSTER FAILOVER of the node that owns a busy lock: no two holders,
// the waiters carry on, and their subscription moves to the new owner.
func TestClusterFailoverUnderContention(t *testing.T) {
	t.Parallel() // on servers of its own, mostly waiting for failovers or leases: see redistest.Parallel
	tg := ownCluster(t)
	name := t.Name()
	slot := layout.Slot(name)
	channel := layout.Aux(layout.MutexChannelPrefix, name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stop, opsSoFar := contention(t, tg, name, 3, 4)
	const failovers = 2
	for i := range failovers {
		time.Sleep(500 * time.Millisecond)
		before, _ := tg.Cluster.MasterForSlot(ctx, slot)
		after, err := tg.Cluster.Failover(ctx, slot)
		require.NoError(t, err)
		t.Logf("failover %d: slot %d moved from %s to %s", i+1, slot, before, after)
		// Messages published in a shard reach its replicas too, so a
		// subscription left on the demoted node (now the new owner's replica)
		// still wakes the waiters; one on any other node would not.
		assert.Eventually(t, func() bool {
			return shardSubscribers(t, after, channel)+shardSubscribers(t, before, channel) > 0
		}, hang, 20*time.Millisecond, "the waiters' subscription is not in the shard of %s", after)
		// The waiters carry on: more critical sections follow, however
		// slowly a loaded machine runs them beside the package's other
		// parallel tests (the bound catches a hang, not a slow rate).
		opsBefore := opsSoFar()
		assert.Eventually(t, func() bool { return opsSoFar()-opsBefore > 10 }, hang, 10*time.Millisecond,
			"the waiters stalled after failover %d", i+1)
	}
	time.Sleep(500 * time.Millisecond) // the waiters carry on after the last one
	ops, worst, grants := stop()
	t.Logf("%d critical sections across %d failovers; most holders at once: %d", ops, failovers, worst)
	assert.EqualValues(t, 1, worst, "two holders at once")
	assert.Greater(t, ops, int64(100))
	checkGrants(t, grants)
}

// SENTINEL FAILOVER under contention: clients follow the new primary, waiters
// resubscribe and acquire, and fencing tokens keep increasing.
func TestSentinelFailoverUnderContention(t *testing.T) {
	t.Parallel() // on servers of its own, mostly waiting for failovers or leases: see redistest.Parallel
	tg, err := redisserver.StartSentinelTarget()
	if err != nil {
		if !redisserver.RequireServer() {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	defer tg.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A sentinel failover is not coordinated with the clients: the old
	// primary takes writes until it is made a replica, and loses those the
	// new one had not received. A lost acquire means two holders (the loss
	// is reported to the first); a lost release leaves the lock held by
	// nobody until its lease runs out, which under this load happens at most
	// failovers. The lease here is short so that the waiters are seen to
	// carry on within the run; with the default 30 s they would all wait
	// that long (no hold takes over another's entry).
	stop, _ := contention(t, tg, t.Name(), 3, 4, redisync.WithWatchdogTimeout(time.Second))
	time.Sleep(500 * time.Millisecond)
	primary, err := tg.Sentinel.Failover(ctx)
	require.NoError(t, err)
	t.Logf("failed over to %s", primary)
	time.Sleep(3 * time.Second) // the waiters carry on on the new primary, after a lost release's lease
	ops, worst, grants := stop()
	// Tokens stay increasing regardless.
	t.Logf("%d critical sections across 1 failover; most holders at once: %d", ops, worst)
	checkGrants(t, grants)
	var after int
	for _, g := range grants {
		if g.began.After(time.Now().Add(-time.Second)) {
			after++
		}
	}
	assert.Positive(t, after, "no acquisitions in the last second: waiters did not follow the new primary")
}

// Migrating a busy lock's slot to another master: operations keep working
// (ASK and MOVED are followed, TRYAGAIN is retried) and waiters are woken on
// the new node.
func TestClusterSlotMigrationUnderContention(t *testing.T) {
	t.Parallel() // on servers of its own, mostly waiting for failovers or leases: see redistest.Parallel
	tg, err := redisserver.StartClusterTarget(3, 0)
	if err != nil {
		if !redisserver.RequireServer() {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	defer tg.Stop()
	name := t.Name()
	slot := layout.Slot(name)
	channel := layout.Aux(layout.MutexChannelPrefix, name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stop, _ := contention(t, tg, name, 3, 4)
	const migrations = 2
	for i := range migrations {
		time.Sleep(500 * time.Millisecond)
		from, err := tg.Cluster.MasterForSlot(ctx, slot)
		require.NoError(t, err)
		to := tg.Cluster.Addrs[0]
		if to == from {
			to = tg.Cluster.Addrs[1]
		}
		require.NoError(t, tg.Cluster.MigrateSlot(ctx, slot, to))
		t.Logf("migration %d: slot %d moved from %s to %s", i+1, slot, from, to)
		assert.Eventually(t, func() bool { return shardSubscribers(t, to, channel) > 0 },
			hang, 20*time.Millisecond, "the waiters did not subscribe on %s", to)
	}
	time.Sleep(500 * time.Millisecond)
	ops, worst, grants := stop()
	t.Logf("%d critical sections across %d slot migrations; most holders at once: %d", ops, migrations, worst)
	assert.EqualValues(t, 1, worst, "two holders at once")
	assert.Greater(t, ops, int64(100))
	checkGrants(t, grants)
}
