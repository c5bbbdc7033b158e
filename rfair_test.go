package redisync_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redisserver"
	"github.com/go-redisync/redisync/internal/redistest"
)

// javaFair stands in for Java threads using a Redisson RFairLock of one name
// (redistest's scripts; the Java clock is the test's).
type javaFair struct {
	t       *testing.T
	rc      rueidis.Client
	l       layout.RFair
	publish string
}

func newJavaFair(t *testing.T, rc rueidis.Client, name string) *javaFair {
	publish := "publish"
	if rc.Mode() == rueidis.ClientModeCluster {
		publish = "spublish"
	}
	return &javaFair{t: t, rc: rc, l: layout.RFairOf(name), publish: publish}
}

// tryLock is one attempt of thread under lease: true when it holds the lock
// (else it is queued, once).
func (j *javaFair) tryLock(thread string, lease time.Duration) bool {
	err := j.rc.Do(context.Background(), j.rc.B().Eval().Script(redistest.JavaFairTryLock).Numkeys(3).
		Key(j.l.Key, j.l.Queue, j.l.Timeouts).
		Arg(strconv.FormatInt(lease.Milliseconds(), 10), thread, strconv.FormatInt(redisync.DefaultFairLockWaitTimeout.Milliseconds(), 10),
			strconv.FormatInt(time.Now().UnixMilli(), 10)).Build()).Error()
	if rueidis.IsRedisNil(err) {
		return true
	}
	require.NoError(j.t, err)
	return false
}

func (j *javaFair) unlock(thread string) {
	require.NoError(j.t, j.rc.Do(context.Background(), j.rc.B().Eval().Script(redistest.JavaFairUnlock).Numkeys(4).
		Key(j.l.Key, j.l.Queue, j.l.Timeouts, j.l.Channel).
		Arg(thread, "30000", strconv.FormatInt(time.Now().UnixMilli(), 10), j.publish).Build()).Error())
}

// lock is Redisson's lock loop for thread: it listens on the thread's own
// channel, tries, and waits for a message (or a second) between tries.
func (j *javaFair) lock(tg *redisserver.Target, thread string) {
	msgs := make(chan struct{}, 1)
	stop := subscribe(j.t, newRueidis(j.t, tg), j.l.WaiterChannel(thread), func(rueidis.PubSubMessage) {
		select {
		case msgs <- struct{}{}:
		default:
		}
	})
	defer stop()
	for !j.tryLock(thread, 30*time.Second) {
		select {
		case <-msgs:
		case <-time.After(time.Second):
		}
	}
}

func (j *javaFair) queue() []string {
	q, err := j.rc.Do(context.Background(), j.rc.B().Lrange().Key(j.l.Queue).Start(0).Stop(-1).Build()).AsStrSlice()
	require.NoError(j.t, err)
	return q
}

// waitQueued waits until n waiters are in Redisson's queue.
func (j *javaFair) waitQueued(n int) {
	require.Eventually(j.t, func() bool { return len(j.queue()) == n }, 10*time.Second, time.Millisecond, "%d queued", n)
}

// A FairMutex in Redisson's layout and Java RFairLock threads share one lock
// and one line: each excludes the other, each side's unlock wakes the other's
// head within milliseconds, and a mixed queue is served in its order; a Go
// TryLock does not pass queued Java waiters.
func TestRedissonFairMutexInterop(t *testing.T) {
	forEachTopology(t, func(t *testing.T, tg *redisserver.Target) {
		name := "rfair:" + freshName(t)
		c, rc := newClient(t, tg)
		java := newJavaFair(t, rc, name)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		const j1, j2 = "1b4e28ba-2fa1-41d2-883f-0016d3cca427:1", "1b4e28ba-2fa1-41d2-883f-0016d3cca427:2"
		require.True(t, java.tryLock(j1, 30*time.Second))
		assert.False(t, c.NewRedissonFairMutex(name).TryLock(), "Go took a lock Java holds")
		ok, err := c.NewMutex(name).TryLockContext(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "a Mutex of the name shares the hash")

		// The line: Go g1, Java j2, Go g2.
		var mu sync.Mutex
		var order []string
		served := func(who string) {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, who)
		}
		g1, g2 := c.NewRedissonFairMutex(name), c.NewRedissonFairMutex(name)
		g1Locked, g2Locked := make(chan time.Time, 1), make(chan time.Time, 1)
		go func() { assert.NoError(t, g1.LockContext(ctx)); served("g1"); g1Locked <- time.Now() }()
		java.waitQueued(1)
		j2Locked := make(chan time.Time, 1)
		go func() { java.lock(tg, j2); served("j2"); j2Locked <- time.Now() }()
		java.waitQueued(2)
		go func() { assert.NoError(t, g2.LockContext(ctx)); served("g2"); g2Locked <- time.Now() }()
		java.waitQueued(3)
		assert.Equal(t, j2, java.queue()[1])
		assert.False(t, c.NewRedissonFairMutex(name).TryLock(), "a TryLock passed the line")

		at := time.Now()
		java.unlock(j1)
		handover := within(t, g1Locked).Sub(at)
		assert.Less(t, handover, 500*time.Millisecond, "Java's unlock woke the Go head")
		assert.False(t, java.tryLock(j2, 30*time.Second), "Java got in beside a Go holder")
		at = time.Now()
		g1.Unlock()
		assert.Less(t, within(t, j2Locked).Sub(at), 500*time.Millisecond, "Go's unlock woke the Java head")
		select {
		case <-g2Locked:
			t.Fatal("g2 got in beside a Java holder")
		case <-time.After(50 * time.Millisecond):
		}
		at = time.Now()
		java.unlock(j2)
		assert.Less(t, within(t, g2Locked).Sub(at), 500*time.Millisecond)
		g2.Unlock()
		assert.Equal(t, []string{"g1", "j2", "g2"}, order)
		t.Logf("Java unlock to Go lock: %v", handover)
	})
}

// within returns what ch gives within 10 s, or fails the test.
func within(t *testing.T, ch <-chan time.Time) time.Time {
	t.Helper()
	select {
	case at := <-ch:
		return at
	case <-time.After(10 * time.Second):
		t.Fatal("not served within 10 s")
		return time.Time{}
	}
}

// A Java holder that dies (its lease is not renewed) lets a queued Go waiter
// in when its lease runs out, without a message.
func TestRedissonFairMutexJavaHolderDies(t *testing.T) {
	forEachTopology(t, func(t *testing.T, tg *redisserver.Target) {
		name := "rfair:" + freshName(t)
		c, rc := newClient(t, tg)
		java := newJavaFair(t, rc, name)
		const lease = time.Second
		require.True(t, java.tryLock("dead-java-uuid:1", lease))
		start := time.Now()
		fm := c.NewRedissonFairMutex(name)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, fm.LockContext(ctx))
		took := time.Since(start)
		assert.GreaterOrEqual(t, took, lease-100*time.Millisecond, "Go got in while the Java holder's lease ran")
		assert.Less(t, took, lease+time.Second, "the lease's end let the Go waiter in")
		fm.Unlock()
	})
}

// A Go waiter that gives up (its ctx ends) leaves Redisson's line: the Java
// waiter behind it is the head when the holder unlocks, and no Go entry is
// left behind.
func TestRedissonFairMutexWaiterGivesUp(t *testing.T) {
	tg := standalone
	name := "rfair:" + freshName(t)
	c, rc := newClient(t, tg)
	java := newJavaFair(t, rc, name)
	const j1, j2 = "java-uuid:1", "java-uuid:2"
	require.True(t, java.tryLock(j1, 30*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- c.NewRedissonFairMutex(name).LockContext(ctx) }()
	java.waitQueued(1)
	require.False(t, java.tryLock(j2, 30*time.Second))
	assert.ErrorIs(t, <-gaveUp, context.DeadlineExceeded)
	assert.Equal(t, []string{j2}, java.queue(), "the Go waiter left the line")
	java.unlock(j1)
	assert.True(t, java.tryLock(j2, 30*time.Second), "the Java waiter behind it is served next")
	java.unlock(j2)
}
