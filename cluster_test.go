package redisync_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-redisync/redisync/internal/keys"
	"github.com/go-redisync/redisync/internal/redistest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// namesOnEveryMaster returns perMaster names with prefix for each master of
// the cluster, so that a test exercises every node.
func namesOnEveryMaster(t *testing.T, tg *redistest.Target, prefix string, perMaster int) []string {
	t.Helper()
	count := make(map[*redistest.Server]int)
	var names []string
	for i := 0; len(names) < perMaster*len(tg.Cluster.Nodes); i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		node := tg.Cluster.NodeForSlot(keys.Slot(name))
		if count[node] < perMaster {
			count[node]++
			names = append(names, name)
		}
	}
	return names
}

func TestClusterHashTaggedNames(t *testing.T) {
	tg := clusterTarget(t)
	hammer(t, tg, []string{"{" + t.Name() + "}:a", "x{" + t.Name() + "}y"}, 2, 4, 50)
}

// On a cluster, waiters subscribe with SSUBSCRIBE on the node that owns the
// lock's slot, and the release script's SPUBLISH wakes them there.
func TestClusterMutexWakeupByShardedPubSub(t *testing.T) {
	tg := clusterTarget(t)
	for _, name := range namesOnEveryMaster(t, tg, t.Name(), 1) {
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
		channel := keys.Aux(keys.MutexChannelPrefix, name)
		owner := tg.Cluster.NodeForSlot(keys.Slot(name)).Addr
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
		handoff := (<-got).Sub(released)
		t.Logf("%s on %s: handoff %v", name, owner, handoff)
		assert.Less(t, handoff, 2*time.Second, "woken by SPUBLISH, not by the 30s lease")
	}
}
