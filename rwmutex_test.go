package redisync_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
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

// rwHammer runs readers and writers from several Clients on one name, as Go's
// own RWMutex tests do: a reader adds 1 to activity and must see no writer,
// a writer adds 10000 and must see nobody. It returns the most Clients seen
// reading at once.
func rwHammer(t *testing.T, tg *redisserver.Target, name string, clients, goroutines, rounds int) int32 {
	var activity atomic.Int32
	reading := make([]atomic.Int32, clients) // readers inside, per Client
	// A read section of 500 µs overlaps others only when an acquisition takes
	// about as long: on miniredis, whose scripts run in an interpreter, one
	// takes tens of milliseconds under load, so its readers stay longer.
	section := 500 * time.Microsecond
	if !tg.Real() {
		section = 20 * time.Millisecond
	}
	// RLockContext under a context without a deadline gives up after a
	// second without an answer (transientBudget; DefaultCallTimeout bounds
	// each attempt). miniredis runs every script of 32 goroutines in one
	// interpreter, under -race beside the other packages' tests: an answer
	// can take more than a second there, which is that server's speed, not
	// what this test is about. Its attempts get longer.
	var opts []redisync.Option
	if !tg.Real() {
		opts = append(opts, redisync.WithCallTimeout(5*time.Second))
	}
	var mostClients atomic.Int32
	var wg sync.WaitGroup
	for ci := range clients {
		c, _ := newClient(t, tg, opts...)
		for g := range goroutines {
			rw := c.NewRWMutex(name)
			writer := g%4 == 0
			wg.Go(func() {
				for range rounds {
					if writer {
						rw.Lock()
						if n := activity.Add(10000); n != 10000 {
							t.Errorf("writer saw activity %d", n)
						}
						time.Sleep(100 * time.Microsecond)
						activity.Add(-10000)
						rw.Unlock()
						continue
					}
					require.NoError(t, rw.RLockContext(context.Background()))
					if n := activity.Add(1); n >= 10000 {
						t.Errorf("reader saw activity %d", n)
					}
					reading[ci].Add(1)
					var inside int32
					for i := range reading {
						if reading[i].Load() > 0 {
							inside++
						}
					}
					if inside > mostClients.Load() {
						mostClients.Store(inside)
					}
					time.Sleep(section)
					reading[ci].Add(-1)
					activity.Add(-1)
					rw.RUnlock()
				}
			})
		}
	}
	wg.Wait()
	return mostClients.Load()
}

func TestRWMutexHammer(t *testing.T) { forEachTopology(t, testRWMutexHammer) }

func testRWMutexHammer(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	start := time.Now()
	rounds := 40
	if !tg.Real() {
		rounds = 10 // miniredis's read sections are 40 times longer (see rwHammer)
	}
	most := rwHammer(t, tg, name, 4, 8, rounds)
	t.Logf("4 Clients x 8 goroutines x %d rounds in %v; readers of %d Clients inside at once", rounds, time.Since(start), most)
	assert.GreaterOrEqual(t, most, int32(3), "readers of 3 Clients were never inside together")
}

// A writer that waits holds new readers back: with readers re-locking
// continuously, it gets the lock once the readers inside have left.
func TestRWMutexWriterPreference(t *testing.T) { forEachTopology(t, testRWMutexWriterPreference) }

func testRWMutexWriterPreference(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	const readHold = 5 * time.Millisecond
	stop := make(chan struct{})
	type read struct{ began, got time.Time }
	var mu sync.Mutex
	var reads []read
	var wg sync.WaitGroup
	for range 2 {
		c, _ := newClient(t, tg)
		for range 3 {
			rw := c.NewRWMutex(name)
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					began := time.Now()
					rw.RLock()
					got := time.Now()
					time.Sleep(readHold)
					rw.RUnlock()
					mu.Lock()
					reads = append(reads, read{began, got})
					mu.Unlock()
				}
			})
		}
	}
	time.Sleep(200 * time.Millisecond) // readers overlapping all the time
	wc, rc := newClient(t, tg)
	writer := wc.NewRWMutex(name)
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	locked := make(chan error, 1)
	go func() { locked <- writer.LockContext(ctx) }()
	// When the writer's claim is seen in Redis; readers that begin after it
	// must not go first.
	claims := layout.Aux(layout.RWWritersPrefix, name)
	var claimed time.Time
	var err error
	for claimed.IsZero() {
		select {
		case err = <-locked:
			claimed = time.Now() // taken before the claim was seen
		default:
			if n, _ := rc.Do(ctx, rc.B().Zcard().Key(claims).Build()).AsInt64(); n > 0 {
				claimed = time.Now()
				err = <-locked
			}
		}
	}
	require.NoError(t, err, "the writer starved")
	got := time.Now()
	time.Sleep(100 * time.Millisecond)
	released := time.Now()
	writer.Unlock()
	close(stop)
	wg.Wait()
	// The bound: the longest read hold in progress when the writer came
	// (5 ms) plus a wake-up; a second is generous for a loaded machine.
	t.Logf("writer waited %v behind readers re-locking every %v", got.Sub(began), readHold)
	assert.Less(t, got.Sub(began), time.Second)
	// Readers that began after the writer's claim was in place got in only
	// after it left.
	for _, r := range reads {
		if r.began.After(claimed) && r.began.Before(released) {
			assert.False(t, r.got.Before(released), "a reader that came after the waiting writer went first")
		}
	}
}

// A read hold entered more often than its renewals first declare timeout
// keys for stays renewed: the renewal script asks for the others, and the
// scheduler renews the hold again with them declared (lease.Lease.Grow).
func TestRWMutexDeepReadHoldIsRenewed(t *testing.T) {
	defer redisync.ReadRenewEveryForTest(100 * time.Millisecond)()
	const lease = 600 * time.Millisecond
	c, rc := newClient(t, standalone)
	name := freshName(t)
	rw := c.NewRWMutex(name, redisync.WithWatchdogTimeout(lease))
	const depth = 5
	for range depth {
		rw.RLock()
	}
	time.Sleep(3 * lease) // only renewals keep it
	require.NoError(t, rw.Err(), "the hold was lost")
	ctx := context.Background()
	timeouts, err := rc.Do(ctx, rc.B().Keys().Pattern(layout.Tagged(name)+":*:rwlock_timeout:*").Build()).AsStrSlice()
	require.NoError(t, err)
	assert.Len(t, timeouts, depth)
	for _, k := range timeouts {
		ms, err := rc.Do(ctx, rc.B().Pttl().Key(k).Build()).AsInt64()
		require.NoError(t, err)
		assert.Positive(t, ms, "%s is renewed", k)
	}
	for range depth {
		rw.RUnlock()
	}
}

func TestRWMutexCrashedReader(t *testing.T) {
	t.Parallel() // waits for leases to run out: see redistest.Parallel
	forEachTopology(t, testRWMutexCrashedReader)
}

func testRWMutexCrashedReader(t *testing.T, tg *redisserver.Target) {
	const lease = time.Second
	name := freshName(t)
	child := startChild(t, tg, name, lease, childRW+"=read")
	c, _ := newClient(t, tg)
	b := c.NewRWMutex(name)
	b.RLock()
	require.NoError(t, child.Process.Kill())
	killed := time.Now()
	b.RUnlock() // A's hold is still there; the lock now lasts as long as A's lease
	w := c.NewRWMutex(name)
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	require.NoError(t, w.LockContext(ctx))
	d := time.Since(killed)
	t.Logf("writer got the lock %v after the reader holding it was killed", d)
	assert.LessOrEqual(t, d, lease+500*time.Millisecond)
	w.Unlock()
}

func TestRWMutexDowngradeAndUpgrade(t *testing.T) { forEachTopology(t, testRWMutexDowngradeAndUpgrade) }

func testRWMutexDowngradeAndUpgrade(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	c, _ := newClient(t, tg)
	other, _ := newClient(t, tg)
	rw := c.NewRWMutex(name)
	owner := redisync.WithOwner(context.Background())
	require.NoError(t, rw.LockContext(owner))
	require.NoError(t, rw.RLockContext(owner), "a writer may take the read lock")
	require.NoError(t, rw.UnlockContext(owner))
	reader, writer := other.NewRWMutex(name), other.NewRWMutex(name)
	assert.True(t, reader.TryRLock(), "after the downgrade, others may read")
	assert.False(t, writer.TryLock(), "and the downgraded read hold keeps writers out")
	reader.RUnlock()
	assert.ErrorIs(t, rw.LockContext(owner), redisync.ErrUpgrade, "an upgrade is refused, not a deadlock")
	ok, err := rw.TryLockContext(owner)
	assert.False(t, ok)
	assert.ErrorIs(t, err, redisync.ErrUpgrade)
	require.NoError(t, rw.RUnlockContext(owner))
	assert.True(t, writer.TryLock())
	writer.Unlock()

	rw.RLock()
	assert.PanicsWithValue(t, fmt.Sprintf("redisync: Lock of RWMutex %q while the handle holds its read lock (upgrade)", name), rw.Lock)
	rw.RUnlock()
}

func TestRWMutexMisuse(t *testing.T) { forEachTopology(t, testRWMutexMisuse) }

func testRWMutexMisuse(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	c, rc := newClient(t, tg)
	rw := c.NewRWMutex(name)
	assert.PanicsWithValue(t, "redisync: RUnlock of unlocked RWMutex "+strconv.Quote(name), rw.RUnlock)
	assert.PanicsWithValue(t, "redisync: Unlock of unlocked RWMutex "+strconv.Quote(name), rw.Unlock)
	assert.ErrorIs(t, rw.RUnlockContext(context.Background()), redisync.ErrNotHeld)
	rw.Lock()
	assert.PanicsWithValue(t, "redisync: RUnlock of unlocked RWMutex "+strconv.Quote(name), rw.RUnlock, "a read unlock by the writer")
	assert.ErrorIs(t, c.NewRWMutex(name).RUnlockContext(context.Background()), redisync.ErrNotHeld)
	mode, err := rc.Do(context.Background(), rc.B().Hget().Key(name).Field("mode").Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "write", mode, "a stray read unlock must not disturb the writer")
	rw.Unlock()
	locked, err := rw.IsLocked(context.Background())
	require.NoError(t, err)
	assert.False(t, locked)
}

// A write unlock wakes every waiting reader in one go: one message, and the
// readers of three Clients all get in long before their timers (the writer's
// 30 s lease) would have fired.
func TestRWMutexWriteUnlockWakesAllReaders(t *testing.T) {
	forEachTopology(t, testRWMutexWriteUnlockWakesAllReaders)
}

func testRWMutexWriteUnlockWakesAllReaders(t *testing.T, tg *redisserver.Target) {
	name := freshName(t)
	wc, rc := newClient(t, tg)
	writer := wc.NewRWMutex(name)
	writer.Lock()
	channel := layout.Aux(layout.RWChannelPrefix, name)
	messages := make(chan string, 10)
	stopSub := subscribe(t, newRueidis(t, tg), channel, func(m rueidis.PubSubMessage) { messages <- m.Message })
	var got sync.WaitGroup
	acquired := make(chan time.Time, 6)
	for range 3 {
		c, _ := newClient(t, tg)
		for range 2 {
			r := c.NewRWMutex(name)
			got.Go(func() {
				r.RLock()
				acquired <- time.Now()
				time.Sleep(200 * time.Millisecond) // all inside together
				r.RUnlock()
			})
		}
	}
	time.Sleep(300 * time.Millisecond)
	released := time.Now()
	writer.Unlock()
	got.Wait()
	close(acquired)
	for at := range acquired {
		assert.Less(t, at.Sub(released), time.Second, "a reader was not woken by the write unlock")
	}
	stopSub()
	close(messages)
	var seen []string
	for m := range messages {
		seen = append(seen, m)
	}
	assert.Equal(t, "1", seen[0], "the write unlock publishes Redisson's wake-all message")
	_ = rc
}

// A reader holding through the Redisson layout (a raw script standing in for
// a Java client) shares with Go readers and excludes Go writers, and a Go
// reader's unlock leaves the Java reader's hold with its own lease.
func TestRWMutexRedissonInterop(t *testing.T) {
	c, rc := newClient(t, standalone)
	ctx := context.Background()
	name := freshName(t)
	field := "0f0e0d0c-java:7"
	require.NoError(t, rc.Do(ctx, rc.B().Hset().Key(name).FieldValue().FieldValue("mode", "read").FieldValue(field, "1").Build()).Error())
	require.NoError(t, rc.Do(ctx, rc.B().Pexpire().Key(name).Milliseconds(20000).Build()).Error())
	javaTimeout := layout.Tagged(name) + ":" + field + ":rwlock_timeout:1"
	require.NoError(t, rc.Do(ctx, rc.B().Set().Key(javaTimeout).Value("1").Px(20*time.Second).Build()).Error())

	rw := c.NewRWMutex(name)
	assert.False(t, rw.TryLock(), "a Java reader excludes a Go writer")
	assert.True(t, rw.TryRLock(), "a Java reader shares with a Go reader")
	rw.RUnlock()
	ttl, err := rw.TTL(ctx)
	require.NoError(t, err)
	assert.Greater(t, ttl, 15*time.Second, "the Java reader's hold keeps its own lease")
	require.NoError(t, rc.Do(ctx, rc.B().Del().Key(name).Build()).Error())
	assert.True(t, rw.TryLock())
	mode, err := rc.Do(ctx, rc.B().Hget().Key(name).Field("mode").Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "write", mode)
	n, err := rc.Do(ctx, rc.B().Hget().Key(name).Field(fmt.Sprintf("%s:write", firstField(t, rc, name))).Build()).AsInt64()
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "the writer field is <uuid>:<owner>:write = count")
	rw.Unlock()
}

// firstField returns the owner part of the write field of the hash name.
func firstField(t *testing.T, rc rueidis.Client, name string) string {
	fields, err := rc.Do(context.Background(), rc.B().Hkeys().Key(name).Build()).AsStrSlice()
	require.NoError(t, err)
	for _, f := range fields {
		if owner, ok := strings.CutSuffix(f, ":write"); ok {
			return owner
		}
	}
	t.Fatalf("no write field in %v", fields)
	return ""
}

// RLock on a handle whose own owner holds the write lock waits, as
// sync.RWMutex's does; before, it entered at once (a downgrade is only for an
// explicit owner).
func TestRWMutexReadWaitsForOwnHandlesWriter(t *testing.T) {
	name := freshName(t)
	c, _ := newClient(t, standalone)
	rw := c.NewRWMutex(name)
	rw.Lock()
	assert.False(t, rw.TryRLock(), "a reader entered while its own handle's writer held the lock")
	assert.ErrorIs(t, rw.RLockContext(short(t, 200*time.Millisecond)), context.DeadlineExceeded)
	got := make(chan struct{})
	go func() {
		rw.RLock()
		close(got)
	}()
	time.Sleep(50 * time.Millisecond)
	select {
	case <-got:
		t.Fatal("RLock returned while the handle's writer held the lock")
	default:
	}
	rw.Unlock()
	select {
	case <-got:
	case <-time.After(hang):
		t.Fatal("RLock did not get the lock after Unlock")
	}
	rw.RUnlock()
	// An explicit owner may still take the read lock under its write lock.
	owner := redisync.WithOwner(context.Background())
	require.NoError(t, rw.LockContext(owner))
	require.NoError(t, rw.RLockContext(owner))
	require.NoError(t, rw.UnlockContext(owner))
	require.NoError(t, rw.RUnlockContext(owner))
}

// Every read hold of an owner keeps the lease of the latest: before, a second
// RLock moved the owner's lease but only its own timeout key, so the first
// key ran out early and another reader's release deleted the lock under a
// live read hold.
func TestRWMutexReadHoldsShareTheLatestLease(t *testing.T) {
	const lease = 2 * time.Second
	c, _ := newClient(t, standalone)
	others, _ := newClient(t, standalone)
	name := freshName(t)
	rw := c.NewRWMutex(name, redisync.WithLease(lease))
	start := time.Now()
	rw.RLock()
	time.Sleep(lease / 2)
	rw.RLock()
	//lint:ignore SA2001 the second read hold's lease, then its release, is what is tested
	rw.RUnlock()
	time.Sleep(time.Until(start.Add(lease + 300*time.Millisecond)))
	reader := others.NewRWMutex(name)
	require.True(t, reader.TryRLock())
	reader.RUnlock()
	require.Less(t, time.Since(start), lease*3/2, "the machine was too slow for this test's timing")
	assert.False(t, others.NewRWMutex(name).TryLock(), "a writer got in while a read hold was live")
	assert.NoError(t, rw.Err())
	rw.RUnlock()
}

// A read hold whose timeout key is gone is lost, and its renewal says so.
func TestRWMutexRenewalFindsTimeoutKeyGone(t *testing.T) {
	c, rc := newClient(t, standalone)
	name := freshName(t)
	rw := c.NewRWMutex(name, redisync.WithWatchdogTimeout(300*time.Millisecond))
	rw.RLock()
	ctx := context.Background()
	timeouts, err := rc.Do(ctx, rc.B().Keys().Pattern(layout.Tagged(name)+":*:rwlock_timeout:*").Build()).AsStrSlice()
	require.NoError(t, err)
	require.Len(t, timeouts, 1)
	require.NoError(t, rc.Do(ctx, rc.B().Del().Key(timeouts...).Build()).Error())
	select {
	case <-rw.Done():
	case <-time.After(hang):
		t.Fatal("the renewal did not notice the read hold's timeout key was gone")
	}
	assert.ErrorIs(t, rw.Err(), redisync.ErrLockLost)
	assert.ErrorIs(t, rw.Err(), redisync.ErrHoldGone, "the loss's cause")
	rw.RUnlock()
}
