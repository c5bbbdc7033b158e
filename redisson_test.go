package redisync_test

import (
	"context"
	"strconv"
	"strings"
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

// A javaRW stands in for a Java service using Redisson's RReadWriteLock on
// one name: raw scripts that do to Redis what Redisson's read and write locks
// do, written here from its protocol (the hash name with "mode", reader
// fields "<uuid>:<thread>" and a timeout key per read entry, the writer field
// "<uuid>:<thread>:write", messages "0" and "1" on redisson_rwlock:{name}).
type javaRW struct {
	t     testing.TB
	rc    rueidis.Client
	name  string
	field string // "<uuid>:<thread>"
	l     layout.RW
}

func newJavaRW(t testing.TB, rc rueidis.Client, name string) *javaRW {
	return &javaRW{t: t, rc: rc, name: name, field: "9a8b7c6d-java:1", l: layout.RWOf(name)}
}

// timeouts is the prefix of the Java reader's timeout keys.
func (j *javaRW) timeouts() string { return j.l.Tagged + ":" + j.field + ":rwlock_timeout" }

// eval runs a raw script and returns its reply (nil as -1).
func (j *javaRW) eval(src string, keys []string, args ...string) int64 {
	j.t.Helper()
	n, err := j.rc.Do(context.Background(), j.rc.B().Eval().Script(src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return -1
	}
	require.NoError(j.t, err)
	return n
}

// readLock takes a read entry for leaseMS: free or read mode, or write mode
// held by its own writer. It returns -1 when acquired, else the lock's PTTL.
func (j *javaRW) readLock(leaseMS int) int64 {
	return j.eval(`
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
	redis.call('hset', KEYS[1], 'mode', 'read')
	redis.call('hset', KEYS[1], ARGV[2], 1)
	redis.call('set', KEYS[2] .. ':1', 1)
	redis.call('pexpire', KEYS[2] .. ':1', ARGV[1])
	redis.call('pexpire', KEYS[1], ARGV[1])
	return nil
end
if mode == 'read' or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
	local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
	redis.call('set', KEYS[2] .. ':' .. n, 1)
	redis.call('pexpire', KEYS[2] .. ':' .. n, ARGV[1])
	redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), tonumber(ARGV[1])))
	return nil
end
return redis.call('pttl', KEYS[1])`, []string{j.name, j.timeouts()}, strconv.Itoa(leaseMS), j.field, j.field+":write")
}

// renewRead is the read lock's watchdog round: the lock's expiry becomes the
// Java lease, shorter or not; with all set (Redisson up to 4.3) the timeout
// keys of every reader are renewed too, else only its own.
func (j *javaRW) renewRead(leaseMS int, all bool) int64 {
	return j.eval(`
if redis.call('hget', KEYS[1], ARGV[2]) == false then
	return 0
end
redis.call('pexpire', KEYS[1], ARGV[1])
for _, f in ipairs(redis.call('hkeys', KEYS[1])) do
	if ARGV[3] == '1' or f == ARGV[2] then
		local n = tonumber(redis.call('hget', KEYS[1], f))
		if type(n) == 'number' then
			for i = n, 1, -1 do
				redis.call('pexpire', KEYS[2] .. ':' .. f .. ':rwlock_timeout:' .. i, ARGV[1])
			end
		end
	end
end
return 1`, []string{j.name, j.l.Tagged}, strconv.Itoa(leaseMS), j.field, map[bool]string{true: "1", false: "0"}[all])
}

// readUnlock leaves one read entry; the last entry of the lock deletes it
// and publishes "0". It returns 1 when the lock was released.
func (j *javaRW) readUnlock() int64 {
	return j.eval(`
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
	redis.call('publish', KEYS[2], '0')
	return 1
end
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
	return nil
end
local n = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if n == 0 then
	redis.call('hdel', KEYS[1], ARGV[1])
end
redis.call('del', KEYS[3] .. ':' .. (n + 1))
if redis.call('hlen', KEYS[1]) > 1 then
	local longest = -3
	for _, f in ipairs(redis.call('hkeys', KEYS[1])) do
		local c = tonumber(redis.call('hget', KEYS[1], f))
		if type(c) == 'number' then
			for i = c, 1, -1 do
				longest = math.max(longest, redis.call('pttl', KEYS[4] .. ':' .. f .. ':rwlock_timeout:' .. i))
			end
		end
	end
	if longest > 0 then
		redis.call('pexpire', KEYS[1], longest)
		return 0
	end
	if mode == 'write' then
		return 0
	end
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], '0')
return 1`, []string{j.name, j.l.Channel, j.timeouts(), j.l.Tagged}, j.field)
}

// writeLock takes the write lock for leaseMS; -1 when acquired, else the
// lock's PTTL.
func (j *javaRW) writeLock(leaseMS int) int64 {
	return j.eval(`
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
	redis.call('hset', KEYS[1], 'mode', 'write')
	redis.call('hset', KEYS[1], ARGV[2], 1)
	redis.call('pexpire', KEYS[1], ARGV[1])
	return nil
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
	redis.call('hincrby', KEYS[1], ARGV[2], 1)
	redis.call('pexpire', KEYS[1], redis.call('pttl', KEYS[1]) + ARGV[1])
	return nil
end
return redis.call('pttl', KEYS[1])`, []string{j.name}, strconv.Itoa(leaseMS), j.field+":write")
}

// writeUnlock leaves the write lock. With read entries of the same thread
// left (a downgrade) the mode becomes read and nothing is published;
// otherwise the lock is deleted and "1" published.
func (j *javaRW) writeUnlock() int64 {
	return j.eval(`
if redis.call('hget', KEYS[1], 'mode') ~= 'write' then
	return nil
end
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
	return nil
end
if redis.call('hincrby', KEYS[1], ARGV[1], -1) > 0 then
	return 0
end
redis.call('hdel', KEYS[1], ARGV[1])
if redis.call('hlen', KEYS[1]) == 1 then
	redis.call('del', KEYS[1])
	redis.call('publish', KEYS[2], '1')
else
	redis.call('hset', KEYS[1], 'mode', 'read')
end
return 1`, []string{j.name, j.l.Channel}, j.field+":write")
}

// forceUnlock deletes any lock hash at key and publishes message on channel,
// as Redisson's forceUnlock does.
func javaForceUnlock(t testing.TB, rc rueidis.Client, key, channel, message string) {
	t.Helper()
	err := rc.Do(context.Background(), rc.B().Eval().Script(`
if redis.call('del', KEYS[1]) == 1 then
	redis.call('publish', KEYS[2], ARGV[1])
	return 1
end
return 0`).Numkeys(2).Key(key, channel).Arg(message).Build()).Error()
	require.NoError(t, err)
}

// pttlOf returns the key's remaining time to live (-2 ms when gone).
func pttlOf(t testing.TB, rc rueidis.Client, key string) time.Duration {
	t.Helper()
	ms, err := rc.Do(context.Background(), rc.B().Pttl().Key(key).Build()).AsInt64()
	require.NoError(t, err)
	return time.Duration(ms) * time.Millisecond
}

// A Java reader's watchdog sets the lock's expiry to its own lease, even when
// that shortens it. When that reader dies, Go readers with longer leases
// (fixed or watchdog) keep the lock: their renewals restore its expiry in time.
func TestRWMutexGoReaderOutlivesJavaReader(t *testing.T) {
	defer redisync.ReadRenewEveryForTest(300 * time.Millisecond)()
	c, rc := newClient(t, standalone)
	name := freshName(t)
	java := newJavaRW(t, rc, name)
	require.EqualValues(t, -1, java.readLock(1500))
	fixed := c.NewRWMutex(name, redisync.WithLease(8*time.Second))
	watched := c.NewRWMutex(name, redisync.WithWatchdogTimeout(9*time.Second))
	fixed.RLock()
	watched.RLock()
	require.EqualValues(t, 1, java.renewRead(1500, false), "the Java watchdog shortens the lock's expiry")
	require.LessOrEqual(t, pttlOf(t, rc, name), 1500*time.Millisecond)
	// The Java reader dies now: its entry lapses after 1.5 s.
	time.Sleep(3 * time.Second)
	assert.Greater(t, pttlOf(t, rc, name), time.Second, "the Go readers' renewals restored the expiry")
	assert.False(t, c.NewRWMutex(name).TryLock(), "a writer is still excluded")
	assert.NoError(t, fixed.Err())
	assert.NoError(t, watched.Err())
	fixed.RUnlock()
	watched.RUnlock()
	assert.True(t, c.NewRWMutex(name).TryLock(), "the lock is free once the Go readers left")
}

// Redisson up to 4.3 renews every reader's timeout keys, Go readers' too: a
// crashed Go reader then keeps writers out for about one Java lease after its
// own ran out (docs/redisson.md). Later versions renew only their own.
func TestRWMutexOldRedissonRenewsGoReaders(t *testing.T) {
	ctx := context.Background()
	base := freshName(t)
	for _, all := range []bool{true, false} {
		c, rc := newClient(t, standalone)
		name := base + ":" + strconv.FormatBool(all)
		java := newJavaRW(t, rc, name)
		require.EqualValues(t, -1, java.readLock(5000))
		goReader := c.NewRWMutex(name, redisync.WithLease(time.Second))
		goReader.RLock()
		keys, err := rc.Do(ctx, rc.B().Keys().Pattern(layout.Tagged(name)+":*").Build()).AsStrSlice()
		require.NoError(t, err)
		var goKey string
		for _, k := range keys {
			if !strings.Contains(k, java.field) {
				goKey = k
			}
		}
		require.NotEmpty(t, goKey, keys)
		java.renewRead(5000, all)
		if all {
			assert.Greater(t, pttlOf(t, rc, goKey), 4*time.Second, "Redisson <= 4.3 extends the Go reader's timeout key")
		} else {
			assert.LessOrEqual(t, pttlOf(t, rc, goKey), time.Second, "later Redisson leaves it alone")
		}
		goReader.RUnlock()
	}
}

// Java's last reader publishes "0", which in Redisson wakes one waiter. A Go
// process whose oldest waiter is a reader held back by a waiting writer's
// claim must still wake that writer at once.
func TestRWMutexJavaLastReaderWakesGoWriter(t *testing.T) {
	ctx := context.Background()
	var writerWakes []redisync.WakeSource
	var mu sync.Mutex
	obs := redisync.WithObserver(redisync.ObserverFunc(func(_ context.Context, e redisync.Event) {
		if e.Kind == redisync.EventWakeup && e.Primitive == redisync.PrimitiveRWWrite {
			mu.Lock()
			writerWakes = append(writerWakes, e.Source)
			mu.Unlock()
		}
	}))
	c, rc := newClient(t, standalone, obs)
	name := freshName(t)
	java := newJavaRW(t, rc, name)
	require.EqualValues(t, -1, java.writeLock(30000))
	reader := c.NewRWMutex(name)
	readerIn := inBackground(reader.RLockContext) // waits first: the oldest waiter
	time.Sleep(200 * time.Millisecond)
	require.EqualValues(t, -1, java.readLock(30000), "the Java writer takes a read entry")
	require.EqualValues(t, 1, java.writeUnlock(), "and downgrades")
	writer := c.NewRWMutex(name)
	writerIn := inBackground(writer.LockContext)
	require.Eventually(t, func() bool {
		n, _ := rc.Do(ctx, rc.B().Zcard().Key(layout.RWOf(name).Writers).Build()).AsInt64()
		return n == 1
	}, hang, time.Millisecond, "the Go writer claims its turn")
	time.Sleep(100 * time.Millisecond) // both wait on the channel
	require.EqualValues(t, 1, java.readUnlock(), "the last Java reader leaves, publishing 0")
	require.NoError(t, <-writerIn)
	mu.Lock()
	last := writerWakes[len(writerWakes)-1]
	mu.Unlock()
	assert.Equal(t, redisync.WakePubSub, last, "the writer was woken by the message, not by its timer")
	writer.Unlock()
	require.NoError(t, <-readerIn)
	reader.RUnlock()
}

// A Java write-to-read downgrade publishes nothing. Go readers waiting behind
// the Java writer still get in soon after it, not after its lease.
func TestRWMutexJavaDowngradeLetsGoReadersIn(t *testing.T) {
	c, rc := newClient(t, standalone)
	name := freshName(t)
	java := newJavaRW(t, rc, name)
	require.EqualValues(t, -1, java.writeLock(30000))
	reader := c.NewRWMutex(name)
	in := inBackground(reader.RLockContext)
	time.Sleep(200 * time.Millisecond)
	require.EqualValues(t, -1, java.readLock(30000))
	downgraded := time.Now()
	require.EqualValues(t, 1, java.writeUnlock())
	select {
	case err := <-in:
		require.NoError(t, err)
		t.Logf("in %v after the silent downgrade", time.Since(downgraded))
	case <-time.After(5 * time.Second):
		t.Fatal("a Go reader waited for the Java writer's lease (30 s) after a downgrade")
	}
	reader.RUnlock()
	java.readUnlock()
}

// A Java forceUnlock of a Go hold publishes like a release; the Go holder
// learns of it at its next renewal: a watchdog hold within a third of its
// lease, a read hold with a fixed lease within the read renewal period.
func TestRedissonForceUnlockNoticedAtRenewal(t *testing.T) {
	defer redisync.ReadRenewEveryForTest(300 * time.Millisecond)()
	c, rc := newClient(t, standalone, redisync.WithWatchdogTimeout(900*time.Millisecond))
	base := freshName(t)
	m := c.NewMutex(base)
	m.Lock()
	javaForceUnlock(t, rc, base, layout.MutexOf(base).Channel, "0")
	forced := time.Now()
	select {
	case <-m.Done():
		t.Logf("Mutex holder told %v after the force unlock", time.Since(forced))
	case <-time.After(hang):
		t.Fatal("the Go holder was never told")
	}
	assert.ErrorIs(t, m.Err(), redisync.ErrHoldGone)
	m.Unlock()

	name := base + ":rw"
	r := c.NewRWMutex(name, redisync.WithLease(time.Minute))
	r.RLock()
	javaForceUnlock(t, rc, name, layout.RWOf(name).Channel, "1")
	select {
	case <-r.Done():
	case <-time.After(hang):
		t.Fatal("a fixed-lease reader was not told before its lease ran out")
	}
	assert.ErrorIs(t, r.Err(), redisync.ErrHoldGone)
	r.RUnlock()
}

// javaLock and javaUnlock do what Redisson's RLock does: a reentrant hash
// field per thread, and "0" on redisson_lock__channel:{name} at the release.
// javaLock returns -1 when acquired, else the lock's PTTL.
func javaLock(t testing.TB, rc rueidis.Client, name, field string, leaseMS int) int64 {
	t.Helper()
	n, err := rc.Do(context.Background(), rc.B().Eval().Script(`
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
	redis.call('hincrby', KEYS[1], ARGV[2], 1)
	redis.call('pexpire', KEYS[1], ARGV[1])
	return nil
end
return redis.call('pttl', KEYS[1])`).Numkeys(1).Key(name).Arg(strconv.Itoa(leaseMS), field).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return -1
	}
	require.NoError(t, err)
	return n
}

func javaUnlock(t testing.TB, rc rueidis.Client, name, field string) {
	t.Helper()
	err := rc.Do(context.Background(), rc.B().Eval().Script(`
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
	return nil
end
if redis.call('hincrby', KEYS[1], ARGV[1], -1) > 0 then
	return 0
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], '0')
return 1`).Numkeys(2).Key(name, layout.MutexOf(name).Channel).Arg(field).Build()).Error()
	if !rueidis.IsRedisNil(err) {
		require.NoError(t, err)
	}
}

// A Java RLock and a Go Mutex of one name exclude each other, and a Java
// release wakes a waiting Go caller by its message.
func TestMutexRedissonInterop(t *testing.T) {
	var wakes []redisync.WakeSource
	var mu sync.Mutex
	c, rc := newClient(t, standalone, redisync.WithObserver(redisync.ObserverFunc(func(_ context.Context, e redisync.Event) {
		if e.Kind == redisync.EventWakeup {
			mu.Lock()
			wakes = append(wakes, e.Source)
			mu.Unlock()
		}
	})))
	name, java := freshName(t), "5e4d3c2b-java:1"
	require.EqualValues(t, -1, javaLock(t, rc, name, java, 30000))
	m := c.NewMutex(name)
	assert.False(t, m.TryLock(), "a Java hold excludes a Go caller")
	in := inBackground(m.LockContext)
	time.Sleep(200 * time.Millisecond)
	javaUnlock(t, rc, name, java)
	require.NoError(t, <-in)
	mu.Lock()
	assert.Equal(t, []redisync.WakeSource{redisync.WakePubSub}, wakes, "woken by the Java release's message")
	mu.Unlock()
	assert.Positive(t, javaLock(t, rc, name, java, 30000), "a Go hold excludes a Java caller")
	m.Unlock()
	assert.EqualValues(t, -1, javaLock(t, rc, name, java, 30000), "the Go release freed it for Java")
	javaUnlock(t, rc, name, java)
}

// inBackground runs f in a goroutine, with a context that ends after hang,
// and delivers its result.
func inBackground(f func(ctx context.Context) error) <-chan error {
	ch := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), hang)
		defer cancel()
		ch <- f(ctx)
	}()
	return ch
}

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
