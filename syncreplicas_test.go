package redisync_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redisserver"
)

// With WithSyncReplicas an acquisition succeeds once the replicas acknowledge
// it; one that they do not acknowledge in time (no replica, or a paused one)
// fails with ErrNotReplicated and leaves no key, where the same acquisition
// without the option succeeds; Lock retries until the replica is back.
func TestSyncReplicas(t *testing.T) {
	forEachTopology(t, func(t *testing.T, tg *redisserver.Target) {
		requireReal(t, tg, "WAIT and ROLE")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		name := "sync:" + freshName(t)
		every, _ := newClient(t, tg, redisync.WithSyncReplicas(-1, time.Second))
		one, rc := newClient(t, tg, redisync.WithSyncReplicas(1, 300*time.Millisecond))
		plain, _ := newClient(t, tg)

		m := every.NewMutex(name)
		require.NoError(t, m.LockContext(ctx), "every connected replica (none on a standalone server)")
		m.Unlock()
		replica := primaryReplica(ctx, t, tg, name)
		if replica == nil {
			// No replica to acknowledge: every primitive's acquisition is
			// refused and undone.
			calls := map[string]func() error{
				"Mutex":      func() error { return one.NewMutex(name).LockContext(ctx) },
				"FairMutex":  func() error { return one.NewFairMutex(name).LockContext(ctx) },
				"RWMutex":    func() error { return one.NewRWMutex(name + ":rw").LockContext(ctx) },
				"RLock":      func() error { return one.NewRWMutex(name + ":rw").RLockContext(ctx) },
				"Semaphore":  func() error { return one.NewSemaphore(name, 2).Acquire(ctx, 1) },
				"Election":   func() error { return one.NewElection(name).Campaign(ctx, "v") },
				"MultiMutex": func() error { return one.NewMultiMutex([]string{name + ":a", name + ":b"}).LockContext(ctx) },
				"Once":       func() error { return one.NewOnce(name).Do(ctx, func(context.Context) error { return nil }) },
			}
			for what, call := range calls {
				assert.ErrorIs(t, call(), redisync.ErrNotReplicated, what)
			}
			keys := []string{name, name + ":rw", name + ":a", name + ":b", layout.FairOf(name).Key,
				layout.ElectionOf(name).Key, layout.OnceOf(name).Claim, layout.OnceOf(name).Done}
			assert.Zero(t, existing(t, rc, keys), "every acquisition undone")
			sem := plain.NewSemaphore(name, 2)
			require.NoError(t, sem.Acquire(ctx, 2), "the refused permits were given back")
			sem.Release(2)
			return
		}
		m = one.NewMutex(name)
		require.NoError(t, m.LockContext(ctx))
		m.Unlock()
		e := one.NewElection(name)
		require.NoError(t, e.Campaign(ctx, "v"))
		require.NoError(t, e.Resign(ctx))

		require.NoError(t, replica.Pause())
		t.Cleanup(func() { _ = replica.Resume() })
		start := time.Now()
		err := one.NewMutex(name).LockContext(ctx)
		took := time.Since(start)
		t.Logf("refused after %v with the replica paused: %v", took, err)
		assert.ErrorIs(t, err, redisync.ErrNotReplicated)
		assert.GreaterOrEqual(t, took, 300*time.Millisecond, "WAIT waited its timeout")
		assert.Zero(t, existing(t, rc, []string{name}), "undone")
		ok, err := one.NewMutex(name).TryLockContext(ctx)
		assert.False(t, ok)
		assert.ErrorIs(t, err, redisync.ErrNotReplicated)
		m = plain.NewMutex(name)
		require.NoError(t, m.LockContext(ctx), "without the option the primary's word is enough")
		m.Unlock()
		// Lock retries until the replica is back.
		retrying := one.NewMutex(name)
		locked := make(chan struct{})
		go func() {
			retrying.Lock()
			close(locked)
		}()
		select {
		case <-locked:
			t.Error("Lock returned while the replica was paused")
		case <-time.After(time.Second):
		}
		require.NoError(t, replica.Resume())
		require.NoError(t, redisserver.WaitReplica(ctx, replica.Addr))
		select {
		case <-locked:
		case <-ctx.Done():
			t.Fatal("Lock did not retry once the replica was back")
		}
		retrying.Unlock()
	})
}

// primaryReplica returns the replica of the primary that serves name, nil
// on a standalone server.
func primaryReplica(ctx context.Context, t *testing.T, tg *redisserver.Target, name string) *redisserver.Server {
	switch {
	case tg.Cluster != nil:
		master, err := tg.Cluster.MasterForSlot(ctx, layout.Slot(name))
		require.NoError(t, err)
		return redisserver.ReplicaOf(ctx, tg.Cluster.Servers(), master)
	case tg.Sentinel != nil:
		primary, err := tg.Sentinel.PrimaryAddr(ctx)
		require.NoError(t, err)
		return redisserver.ReplicaOf(ctx, tg.Sentinel.Servers(), primary)
	}
	return nil
}

// A master killed right after an acquisition, its replica promoted: the lock
// taken with WithSyncReplicas is on the new master; one taken without it while
// the replica was cut off is gone, though its acquire had succeeded (with the
// option, that acquire fails).
func TestSyncReplicasSurviveFailover(t *testing.T) {
	t.Parallel() // on servers of its own, mostly waiting for failovers or leases: see redistest.Parallel
	tg := ownCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	synced, rc := newClient(t, tg, redisync.WithSyncReplicas(1, time.Second))
	plain, _ := newClient(t, tg)
	kept, lost := "{failover}:kept", "{failover}:lost"
	slot := layout.Slot(kept)
	master, err := tg.Cluster.MasterForSlot(ctx, slot)
	require.NoError(t, err)
	replica := redisserver.ReplicaOf(ctx, tg.Cluster.Servers(), master)
	require.NotNil(t, replica)

	require.NoError(t, synced.NewMutex(kept).LockContext(ctx))
	// The replica is cut off: paused, and its link killed (a link left up
	// would deliver the next write into its socket, read on resumption).
	require.NoError(t, replica.Pause())
	require.NoError(t, redisserver.Run(ctx, master, "CLIENT", "KILL", "TYPE", "replica"))
	require.NoError(t, plain.NewMutex(lost).LockContext(ctx), "acknowledged by the master alone")
	err = synced.NewMutex(lost + ":synced").LockContext(ctx)
	assert.ErrorIs(t, err, redisync.ErrNotReplicated, "the option refuses what the replica does not have")
	require.NoError(t, tg.Cluster.ServerAt(master).Kill())
	require.NoError(t, replica.Resume())
	require.NoError(t, redisserver.Run(ctx, replica.Addr, "CLUSTER", "FAILOVER", "TAKEOVER"))
	_, err = tg.Cluster.WaitRouted(ctx, slot, master)
	require.NoError(t, err)
	assert.EqualValues(t, 1, existing(t, rc, []string{kept}), "the synced lock survived the failover")
	assert.Zero(t, existing(t, rc, []string{lost}), "the unsynced one was lost with the master")
}

// A hold passes between handles of one Client only when it satisfies the
// receiver's acquisition rules: a plain handle's hold, taken without WAIT,
// is never handed to a WithSyncReplicas handle, which acquires in Redis
// and is refused while the only replica is frozen.
func TestSyncReplicasNoHandoverFromPlain(t *testing.T) {
	forEachTopology(t, func(t *testing.T, tg *redisserver.Target) {
		requireReal(t, tg, "WAIT and ROLE")
		t.Cleanup(redisync.LongHandoversForTest()) // a hold older than 1 ms may still be handed
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		name := "sync:" + freshName(t)
		replica := primaryReplica(ctx, t, tg, name)
		if replica == nil {
			t.Skip("no replica on a standalone server")
		}
		c, rc := newClient(t, tg)
		plain, synced := c.NewMutex(name), c.NewMutex(name, redisync.WithSyncReplicas(1, 300*time.Millisecond))
		require.NoError(t, replica.Pause())
		t.Cleanup(func() { _ = replica.Resume() })
		require.NoError(t, plain.LockContext(ctx))
		got := inBackground(synced.LockContext)
		require.Eventually(t, func() bool { return redisync.HandoverWaitersForTest(c, name) == 1 }, hang, time.Millisecond,
			"the synced handle never waited")
		plain.Unlock()
		err := <-got
		if err == nil {
			synced.Unlock()
		}
		assert.ErrorIs(t, err, redisync.ErrNotReplicated, "the synced handle got a hold no replica acknowledged")
		assert.Zero(t, existing(t, rc, []string{name}), "the refused acquisition was undone")
	})
}

// A WithSyncReplicas call that cannot get its acquisitions acknowledged
// (its only replica frozen) keeps no plain call of its Client from a free
// lock: neither Lock, which retries inside the call, nor LockContext called
// again and again as a service's loop would; the plain call waiting behind
// it in the Client's queue takes the lock.
func TestSyncReplicasRefusedWaiterDoesNotBlockPlain(t *testing.T) {
	forEachTopology(t, func(t *testing.T, tg *redisserver.Target) {
		requireReal(t, tg, "WAIT and ROLE")
		for _, retries := range []bool{true, false} {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			name := fmt.Sprintf("sync:%s:%v", freshName(t), retries)
			replica := primaryReplica(ctx, t, tg, name)
			if replica == nil {
				t.Skip("no replica on a standalone server")
			}
			c, _ := newClient(t, tg)
			other, _ := newClient(t, tg)
			holder := other.NewMutex(name)
			require.NoError(t, holder.LockContext(ctx))
			plain, synced := c.NewMutex(name), c.NewMutex(name, redisync.WithSyncReplicas(1, 100*time.Millisecond))
			require.NoError(t, replica.Pause())
			stop, done := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				if retries {
					synced.Lock() // returns once the replica is back
					err := synced.Err()
					synced.Unlock()
					assert.NoError(t, err, "the synced hold, taken once the replica was back")
					return
				}
				for {
					if synced.LockContext(ctx) == nil {
						synced.Unlock()
					}
					select {
					case <-stop:
						return
					default:
					}
				}
			}()
			require.Eventually(t, func() bool { return redisync.HandoverWaitersForTest(c, name) == 1 }, hang, time.Millisecond,
				"the synced handle never waited")
			got := inBackground(plain.LockContext)
			require.Eventually(t, func() bool { return redisync.HandoverWaitersForTest(c, name) == 2 }, hang, time.Millisecond,
				"the plain handle never waited behind it")
			holder.Unlock()
			var err error
			select {
			case err = <-got:
			case <-time.After(5 * time.Second): // generous: the lock is free at once
				err = errors.New("not served in 5 s")
			}
			close(stop)
			require.NoError(t, replica.Resume())
			if err == nil {
				plain.Unlock()
			}
			<-done
			require.NoError(t, err, "the plain call behind a refused synced call got the free lock")
		}
	})
}

// On a cluster, WAIT counts the replicas of the node that ran the script,
// whichever node the client sent it to first. A call answered ASK (its slot
// half moved to another master) or MOVED (a slot map the client has not
// refreshed yet) is sent again, with its WAIT, to the node named. Left to
// rueidis (v1.0.79), the ASK panicked (index out of range in
// clusterClient.doresultfn, following ASK in a batch that holds WAIT; it
// killed three workers of a 30-minute chaos run), and the MOVED sent the
// script alone to the new node and kept the old node's WAIT: an acquisition
// that the new node's cut-off replica never saw was reported replicated.
func TestSyncReplicasFollowRedirects(t *testing.T) {
	tg := ownCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := "{redirect}:lock"
	slot := layout.Slot(name)
	from, err := tg.Cluster.MasterForSlot(ctx, slot)
	require.NoError(t, err)
	to := tg.Cluster.Addrs[0]
	if to == from {
		to = tg.Cluster.Addrs[1]
	}
	synced, _ := newClient(t, tg, redisync.WithSyncReplicas(1, 300*time.Millisecond))
	plain, _ := newClient(t, tg)

	// ASK: the source has none of the lock's keys, and the importing master
	// answers TRYAGAIN (a script's keys are not all there) until the move
	// ends; Exec retries meanwhile.
	_, _, err = tg.Cluster.BeginMigration(ctx, slot, to)
	require.NoError(t, err)
	m := synced.NewMutex(name)
	got := inBackground(m.LockContext)
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, tg.Cluster.MigrateSlot(ctx, slot, to))
	require.NoError(t, <-got, "taken on the new master, acknowledged by its replica")
	assert.EqualValues(t, 1, existsOn(t, to, name), "the lock is on the new master")
	ok, err := plain.NewMutex(name).TryLockContext(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "held")
	m.Unlock()

	// MOVED: a Client whose slot map predates the move, while the new
	// master's replica is cut off and the old master's is not.
	stale, _ := newClient(t, tg, redisync.WithSyncReplicas(1, 300*time.Millisecond))
	require.NoError(t, tg.Cluster.MigrateSlot(ctx, slot, from))
	from, to = to, from
	require.NotNil(t, redisserver.ReplicaOf(ctx, tg.Cluster.Servers(), from), "the old master keeps a replica")
	replica := redisserver.ReplicaOf(ctx, tg.Cluster.Servers(), to)
	require.NotNil(t, replica)
	require.NoError(t, replica.Pause())
	t.Cleanup(func() { _ = replica.Resume() })
	require.NoError(t, redisserver.Run(ctx, to, "CLIENT", "KILL", "TYPE", "replica"))
	ok, err = stale.NewMutex(name).TryLockContext(ctx)
	assert.False(t, ok)
	assert.ErrorIs(t, err, redisync.ErrNotReplicated, "the new master's replica did not acknowledge")
	assert.Zero(t, existsOn(t, to, name), "the refused acquisition was undone")
}

// existsOn returns whether the node at addr, a master serving key's slot,
// holds key.
func existsOn(t *testing.T, addr, key string) int64 {
	node := nodeClient(t, addr)
	defer node.Close()
	n, err := node.Do(context.Background(), node.B().Exists().Key(key).Build()).AsInt64()
	require.NoError(t, err)
	return n
}
