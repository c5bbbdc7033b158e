package redisync_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redisserver"
)

// With WithShardedPubSub(false), a Client on Redis Cluster talks to a Java
// service whose Redisson subscribes classically: a classic subscriber (on
// whatever node) hears its release, and a classic PUBLISH of a Java unlock
// wakes its waiter. The lease is long, so only the message can do it fast;
// with sharded Pub/Sub (the default) neither would arrive.
func TestClassicPubSubOnCluster(t *testing.T) {
	tg := clusterTarget(t)
	c, rc := newClient(t, tg, redisync.WithShardedPubSub(false))
	name := "classic:" + freshName(t)
	channel := layout.MutexOf(name).Channel
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// Java listens classically: our release reaches it.
	got := make(chan string, 8)
	ready, ended := make(chan struct{}), make(chan struct{})
	var once sync.Once
	subCtx, stop := context.WithCancel(rueidis.WithOnSubscriptionHook(ctx, func(rueidis.PubSubSubscription) {
		once.Do(func() { close(ready) })
	}))
	defer func() {
		stop()
		<-ended
	}()
	go func() {
		defer close(ended)
		_ = newRueidis(t, tg).Receive(subCtx, rc.B().Subscribe().Channel(channel).Build(), func(m rueidis.PubSubMessage) {
			select {
			case got <- m.Message:
			default:
			}
		})
	}()
	<-ready
	m := c.NewMutex(name)
	require.NoError(t, m.LockContext(ctx))
	require.NoError(t, m.UnlockContext(ctx))
	select {
	case msg := <-got:
		assert.Equal(t, "0", msg)
	case <-time.After(5 * time.Second):
		t.Fatal("a classic subscriber did not hear the release")
	}

	// Java holds (a Redisson hold: a field, a 30 s lease) and unlocks with a
	// classic PUBLISH: our waiter gets the lock at once.
	require.NoError(t, rc.Do(ctx, rc.B().Hset().Key(name).FieldValue().FieldValue("java-uuid:1", "1").Build()).Error())
	require.NoError(t, rc.Do(ctx, rc.B().Pexpire().Key(name).Milliseconds(30_000).Build()).Error())
	acquired := make(chan error, 1)
	go func() { acquired <- m.LockContext(ctx) }()
	time.Sleep(200 * time.Millisecond) // the waiter subscribes
	require.NoError(t, rc.Do(ctx, rc.B().Del().Key(name).Build()).Error())
	unlocked := time.Now()
	require.NoError(t, rc.Do(ctx, rc.B().Publish().Channel(channel).Message("0").Build()).Error())
	select {
	case err := <-acquired:
		require.NoError(t, err)
		assert.Less(t, time.Since(unlocked), 5*time.Second, "woken by the message, not by the 30 s lease")
	case <-time.After(10 * time.Second):
		t.Fatal("a classic PUBLISH did not wake the waiter")
	}
	require.NoError(t, m.UnlockContext(ctx))
}

// The option is Client-wide.
func TestShardedPubSubIsClientWide(t *testing.T) {
	c, _ := newClient(t, standalone)
	assert.Panics(t, func() { c.NewMutex("x", redisync.WithShardedPubSub(false)) })
	assert.NotPanics(t, func() { c.NewMutex("x", redisync.WithShardedPubSub(true)) })
}

// WithShardedPubSub(false) changes nothing where Pub/Sub is classic already
// (standalone, Sentinel) and makes a cluster classic: on every topology a
// release wakes a waiter in another Client at once, not at the 30 s lease.
func TestClassicPubSubEverywhere(t *testing.T) {
	forEachTopology(t, func(t *testing.T, tg *redisserver.Target) {
		a, _ := newClient(t, tg, redisync.WithShardedPubSub(false))
		b, _ := newClient(t, tg, redisync.WithShardedPubSub(false))
		name := "classic:" + freshName(t)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		holder := a.NewMutex(name)
		require.NoError(t, holder.LockContext(ctx))
		locked := make(chan time.Time, 1)
		go func() {
			m := b.NewMutex(name)
			assert.NoError(t, m.LockContext(ctx))
			locked <- time.Now()
			m.Unlock()
		}()
		time.Sleep(100 * time.Millisecond)
		released := time.Now()
		holder.Unlock()
		took := (<-locked).Sub(released)
		t.Logf("the waiter locked %v after the release", took)
		assert.Less(t, took, 2*time.Second)
	})
}
