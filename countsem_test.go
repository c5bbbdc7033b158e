package redisync_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redisserver"
	"github.com/go-redisync/redisync/internal/redistest"
	"github.com/go-redisync/redisync/internal/scripts"
)

// javaSem stands in for a Java service's Redisson RSemaphore called name
// (redistest's scripts, written from Redisson's protocol).
type javaSem struct {
	t       *testing.T
	rc      rueidis.Client
	l       layout.CountSem
	publish string
}

func newJavaSem(t *testing.T, rc rueidis.Client, name string) *javaSem {
	publish := "publish"
	if rc.Mode() == rueidis.ClientModeCluster {
		publish = "spublish"
	}
	return &javaSem{t: t, rc: rc, l: layout.CountSemOf(name), publish: publish}
}

func (j *javaSem) tryAcquire(n int) bool {
	took, err := j.rc.Do(context.Background(), j.rc.B().Eval().Script(redistest.JavaSemTryAcquire).Numkeys(1).Key(j.l.Key).
		Arg(strconv.Itoa(n)).Build()).AsInt64()
	require.NoError(j.t, err)
	return took == 1
}

func (j *javaSem) release(n int) {
	require.NoError(j.t, j.rc.Do(context.Background(), j.rc.B().Eval().Script(redistest.JavaSemRelease).Numkeys(2).
		Key(j.l.Key, j.l.Channel).Arg(strconv.Itoa(n), j.publish).Build()).Error())
}

func (j *javaSem) free() int64 {
	n, err := j.rc.Do(context.Background(), j.rc.B().Get().Key(j.l.Key).Build()).AsInt64()
	require.NoError(j.t, err)
	return n
}

// A CountingSemaphore counts permits as x/sync/semaphore.Weighted does
// (Acquire waits, TryAcquire does not, Release wakes, releasing more than
// held panics), on every topology.
func TestCountingSemaphoreCounts(t *testing.T) {
	forEachTopology(t, func(t *testing.T, tg *redisserver.Target) {
		name := "csem:" + freshName(t)
		c, _ := newClient(t, tg)
		s := c.NewCountingSemaphore(name, 3)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		free, err := s.Available(ctx)
		require.NoError(t, err)
		assert.EqualValues(t, 3, free, "a name never used has its size")
		require.NoError(t, s.Acquire(ctx, 2))
		assert.False(t, s.TryAcquire(2))
		assert.True(t, s.TryAcquire(1))
		assert.EqualValues(t, 3, s.Held())
		require.NoError(t, s.Acquire(ctx, 0))

		other, _ := newClient(t, tg)
		waiter := other.NewCountingSemaphore(name, 3)
		got := make(chan error, 1)
		go func() { got <- waiter.Acquire(ctx, 2) }()
		time.Sleep(100 * time.Millisecond)
		select {
		case err := <-got:
			t.Fatalf("Acquire(2) returned %v with no permit free", err)
		default:
		}
		released := time.Now()
		s.Release(2)
		require.NoError(t, <-got)
		assert.Less(t, time.Since(released), 500*time.Millisecond, "woken by the release's message, not the 1 s look")
		free, err = s.Available(ctx)
		require.NoError(t, err)
		assert.EqualValues(t, 0, free)

		short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancelShort()
		assert.ErrorIs(t, s.Acquire(short, 1), context.DeadlineExceeded)
		assert.Panics(t, func() { s.Release(2) }, "released more than held")
		s.Release(1)
		waiter.Release(2)
		free, err = s.Available(ctx)
		require.NoError(t, err)
		assert.EqualValues(t, 3, free, "every permit back, none twice")
	})
}

// A Java RSemaphore of the same name shares the permits: Java's take makes
// Go wait, Java's release (its message) wakes Go at once, and Go's release
// publishes the count as Redisson's does, which a Java waiter hears.
func TestCountingSemaphoreRedissonInterop(t *testing.T) {
	forEachTopology(t, func(t *testing.T, tg *redisserver.Target) {
		name := "csem:" + freshName(t)
		c, rc := newClient(t, tg)
		s := c.NewCountingSemaphore(name, 2)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		require.NoError(t, s.Acquire(ctx, 1)) // the first use sets the count: 2
		java := newJavaSem(t, rc, name)
		require.True(t, java.tryAcquire(1))
		assert.False(t, java.tryAcquire(1), "Go's permit is not Java's to take")

		got := make(chan error, 1)
		go func() { got <- s.Acquire(ctx, 1) }()
		time.Sleep(100 * time.Millisecond)
		select {
		case err := <-got:
			t.Fatalf("Go took a permit Java holds: %v", err)
		default:
		}
		released := time.Now()
		java.release(1)
		require.NoError(t, <-got)
		assert.Less(t, time.Since(released), 500*time.Millisecond, "woken by Java's message")

		messages := make(chan string, 4)
		stop := subscribe(t, newRueidis(t, tg), java.l.Channel, func(m rueidis.PubSubMessage) { messages <- m.Message })
		defer stop()
		s.Release(2)
		select {
		case m := <-messages:
			assert.Equal(t, "2", m, "the count, as Redisson publishes it")
		case <-time.After(5 * time.Second):
			t.Fatal("Go's release published nothing a Java waiter would hear")
		}
		assert.EqualValues(t, 2, java.free())
	})
}

// Attacks on the count: an acquire whose caller gave up before it was sent
// lands later and takes nothing; one that took its permits but whose reply
// was lost is undone when its caller gives up; a release whose reply is lost
// is repeated and adds once.
func TestCountingSemaphoreLateAndLost(t *testing.T) {
	tg := standalone
	name := "csem:" + freshName(t)
	c, lc := newLateClient(t, tg)
	s := c.NewCountingSemaphore(name, 2)
	java := newJavaSem(t, newRueidis(t, tg), name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	free := func() int64 {
		n, err := s.Available(ctx)
		require.NoError(t, err)
		return n
	}
	require.NoError(t, s.Acquire(ctx, 1))
	s.Release(1) // the count is set: 2

	lc.Hold(scripts.CountSemAcquire, 1)
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	require.ErrorIs(t, s.Acquire(short, 1), context.DeadlineExceeded)
	lc.Deliver(t) // the attempt arrives after its call gave up
	assert.EqualValues(t, 2, free(), "a late copy took a permit")
	assert.Zero(t, s.Held())

	lc.DelayReply(scripts.CountSemAcquire, 1)
	short2, cancelShort2 := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort2()
	require.ErrorIs(t, s.Acquire(short2, 1), context.DeadlineExceeded)
	assert.EqualValues(t, 2, free(), "the permit taken by an attempt whose reply was lost was not given back")
	lc.Deliver(t)
	assert.Zero(t, s.Held())

	require.NoError(t, s.Acquire(ctx, 2))
	lc.DelayReply(scripts.CountSemRelease, 1)
	go func() {
		for lc.Caught() == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(2500 * time.Millisecond) // past the release's 2 s budget: it is sent again
		lc.DeliverAll()
	}()
	s.Release(2)
	assert.EqualValues(t, 2, free(), "a repeated release added twice")
	assert.True(t, java.tryAcquire(2))
}
