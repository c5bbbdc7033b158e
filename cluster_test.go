package redisync_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redisserver"
)

// namesOnEveryMaster returns perMaster names with prefix for each master of
// the cluster, so that a test exercises every node.
func namesOnEveryMaster(t *testing.T, tg *redisserver.Target, prefix string, perMaster int) []string {
	t.Helper()
	count := make(map[*redisserver.Server]int)
	var names []string
	for i := 0; len(names) < perMaster*len(tg.Cluster.Nodes); i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		node := tg.Cluster.NodeForSlot(layout.Slot(name))
		if count[node] < perMaster {
			count[node]++
			names = append(names, name)
		}
	}
	return names
}

func TestClusterHashTaggedNames(t *testing.T) {
	t.Parallel() // a hammer, as the others: see redistest.Parallel
	tg := clusterTarget(t)
	base := freshName(t)
	hammer(t, tg, []string{"{" + base + "}:a", "x{" + base + "}y"}, 2, 4, 50)
}

// On a cluster, waiters subscribe with SSUBSCRIBE on the node that owns the
// lock's slot, and the release script's SPUBLISH wakes them there.
func TestClusterMutexWakeupByShardedPubSub(t *testing.T) {
	tg := clusterTarget(t)
	base := freshName(t)
	for _, name := range namesOnEveryMaster(t, tg, base, 1) {
		holder, _ := newClient(t, tg)
		waiter, rc := newClient(t, tg)
		h := holder.NewMutex(name)
		h.Lock()
		got := make(chan time.Time, 1)
		go func() {
			w := waiter.NewMutex(name)
			w.Lock()
			got <- time.Now()
			w.Unlock()
		}()
		channel := layout.Aux(layout.MutexChannelPrefix, name)
		owner := tg.Cluster.NodeForSlot(layout.Slot(name)).Addr
		require.Eventually(t, func() bool {
			n, err := rc.Nodes()[owner].Do(context.Background(),
				rc.B().PubsubShardnumsub().Channel(channel).Build()).AsIntMap()
			return err == nil && n[channel] == 1
		}, hang, 10*time.Millisecond, "no shard subscription on the slot's node %s", owner)
		for addr, node := range rc.Nodes() {
			shard, err := node.Do(context.Background(), node.B().PubsubShardnumsub().Channel(channel).Build()).AsIntMap()
			require.NoError(t, err)
			plain, err := node.Do(context.Background(), node.B().PubsubNumsub().Channel(channel).Build()).AsIntMap()
			require.NoError(t, err)
			assert.Zero(t, plain[channel], "a plain subscription on %s", addr)
			if addr != owner {
				assert.Zero(t, shard[channel], "a shard subscription on %s, which does not own the slot", addr)
			}
		}
		released := time.Now()
		h.Unlock()
		handover := (<-got).Sub(released)
		t.Logf("%s on %s: handover %v", name, owner, handover)
		assert.Less(t, handover, 2*time.Second, "woken by SPUBLISH, not by the 30s lease")
	}
}

// A name whose auxiliary keys would fall in another cluster slot than the
// lock key ("a}b": its channel "redisson_lock__channel:{a}b}" is tagged "a")
// is refused when the handle is made; before, such a name passed and a
// script call mixing its keys panicked inside rueidis on a cluster. A name
// with "}" after a hash tag keeps every key in the tag's slot and works.
func TestClusterNamesWithClosingBrace(t *testing.T) {
	tg := clusterTarget(t)
	c, _ := newClient(t, tg)
	for _, bad := range []string{"a}b", t.Name() + "}", "}"} {
		assert.PanicsWithValue(t, `redisync: invalid lock name "`+bad+`": name contains '}' without a hash tag {...} before it, so its keys cannot share one cluster slot`,
			func() { c.NewMutex(bad) }, "NewMutex(%q)", bad)
		assert.Panics(t, func() { c.NewFencedMutex(bad) }, "NewFencedMutex(%q)", bad)
		assert.Panics(t, func() { c.NewRWMutex(bad) }, "NewRWMutex(%q)", bad)
		assert.Panics(t, func() { c.NewFairMutex(bad) }, "NewFairMutex(%q)", bad)
		assert.Panics(t, func() { c.NewSemaphore(bad, 1) }, "NewSemaphore(%q)", bad)
	}
	ctx := context.Background()
	base := freshName(t)
	for _, good := range []string{"x}{" + base + "}", "{" + base + "}}"} {
		m := c.NewMutex(good)
		m.Lock()
		//lint:ignore SA2001 taking and leaving the lock is what is tested
		m.Unlock()
		f := c.NewFencedMutex(good + ":fenced")
		_, err := f.LockToken(ctx)
		require.NoError(t, err, good)
		require.NoError(t, f.UnlockContext(ctx), good)
		rw := c.NewRWMutex(good + ":rw")
		rw.RLock()
		//lint:ignore SA2001 taking and leaving the lock is what is tested
		rw.RUnlock()
		rw.Lock()
		//lint:ignore SA2001 taking and leaving the lock is what is tested
		rw.Unlock()
		fm := c.NewFairMutex(good + ":fair")
		fm.Lock()
		//lint:ignore SA2001 taking and leaving the lock is what is tested
		fm.Unlock()
		s := c.NewSemaphore(good+":sem", 2)
		require.NoError(t, s.Acquire(ctx, 2), good)
		s.Release(2)
	}
}

// On a cluster every key and the channel of a FairMutex share the name's
// slot; wake-ups go by SPUBLISH on that node. The FIFO rounds need them: a
// waiter in another Client that missed its turn message would wait out the
// holder's 30 s lease and fail the round.
func TestClusterFairMutex(t *testing.T) {
	tg := clusterTarget(t)
	base := freshName(t)
	names := namesOnEveryMaster(t, tg, base, 1)
	for _, name := range append(names, "{"+base+"}:tagged") {
		fifo(t, tg, name, 20, 1)
	}
	crashFair(t, tg, names[0])
}
