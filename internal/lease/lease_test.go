package lease_test

import (
	"context"
	"crypto/fips140"
	"crypto/sha1"
	"encoding/hex"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/redisserver"
	"github.com/go-redisync/redisync/internal/redistest"
	"github.com/go-redisync/redisync/internal/scripts"
)

var target *redisserver.Target

func TestMain(m *testing.M) { redistest.Main(m, &target) }

type fixture struct {
	rc     rueidis.Client
	runner *scripts.Runner
	sched  *lease.Scheduler
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	rc, err := target.NewClient()
	require.NoError(t, err)
	f := &fixture{rc: rc, runner: scripts.NewRunner(rc, rc.Mode() == rueidis.ClientModeCluster)}
	f.sched = lease.New(f.runner, false, slog.Default())
	t.Cleanup(func() {
		f.sched.Close()
		rc.Close()
	})
	return f
}

// hold takes the lock key for field with ttl and returns a lease for it whose
// losses are sent on the returned channel.
func (f *fixture) hold(t *testing.T, key string, ttl time.Duration, renew bool) (*lease.Lease, chan error) {
	t.Helper()
	ms := strconv.FormatInt(ttl.Milliseconds(), 10)
	sent := time.Now()
	err := f.runner.Exec(context.Background(), scripts.Call{
		Script: scripts.MutexAcquire, Keys: []string{key, key + ":latch"}, Args: []string{ms, "f:1", "0"},
	}).Error()
	require.True(t, rueidis.IsRedisNil(err), "acquire %s: %v", key, err)
	lost := make(chan error, 1)
	l := &lease.Lease{Key: key, Keys: []string{key}, Args: []string{"f:1", ms}, TTL: ttl,
		Lost: lease.ReportFunc(func(cause error) { lost <- cause })}
	if renew {
		l.Renew = scripts.MutexRenew
	}
	f.sched.Add(l, sent)
	return l, lost
}

func (f *fixture) pttl(key string) time.Duration {
	ms, _ := f.rc.Do(context.Background(), f.rc.B().Pttl().Key(key).Build()).AsInt64()
	return time.Duration(ms) * time.Millisecond
}

func TestWatchdogKeepsLeaseAlive(t *testing.T) {
	f := newFixture(t)
	key := redistest.Name(t)
	_, lost := f.hold(t, key, 600*time.Millisecond, true)
	lowest := time.Hour
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		lowest = min(lowest, f.pttl(key))
	}
	select {
	case err := <-lost:
		t.Fatalf("lease lost: %v", err)
	default:
	}
	// Renewed every 200 ms, so the PTTL stays near 400 ms or more; 150 ms
	// leaves room for a slow machine without letting a stalled watchdog pass.
	assert.Greater(t, lowest, 150*time.Millisecond, "lowest PTTL seen over 2s")
}

func TestFixedLeaseReportsExpiry(t *testing.T) {
	f := newFixture(t)
	start := time.Now()
	_, lost := f.hold(t, redistest.Name(t), 300*time.Millisecond, false)
	select {
	case err := <-lost:
		assert.ErrorIs(t, err, lease.ErrExpired)
		assert.GreaterOrEqual(t, time.Since(start), 290*time.Millisecond, "reported before the lease ran out")
	case <-time.After(5 * time.Second):
		t.Fatal("fixed lease expiry not reported")
	}
	assert.Zero(t, f.sched.Len())
}

// A lease due before the one the scheduler sleeps for wakes it: here a
// 300 ms fixed lease added while a one-hour lease is watched is reported on
// time, not an hour later. (Adding a lease due later wakes nothing.)
func TestEarlierLeaseWakesScheduler(t *testing.T) {
	f := newFixture(t)
	name := redistest.Name(t)
	f.hold(t, name+":late", time.Hour, false)
	f.hold(t, name+":later", 2*time.Hour, false)
	time.Sleep(50 * time.Millisecond) // the scheduler sleeps for the hour
	start := time.Now()
	_, lost := f.hold(t, name+":early", 300*time.Millisecond, false)
	select {
	case err := <-lost:
		assert.ErrorIs(t, err, lease.ErrExpired)
		assert.GreaterOrEqual(t, time.Since(start), 290*time.Millisecond, "reported before the lease ran out")
	case <-time.After(5 * time.Second):
		t.Fatal("an earlier lease added while the scheduler slept was not watched")
	}
}

func TestDeletedKeyIsReportedLost(t *testing.T) {
	f := newFixture(t)
	key := redistest.Name(t)
	_, lost := f.hold(t, key, 900*time.Millisecond, true)
	require.NoError(t, f.rc.Do(context.Background(), f.rc.B().Del().Key(key).Build()).Error())
	deleted := time.Now()
	select {
	case err := <-lost:
		assert.ErrorIs(t, err, lease.ErrNotHeld)
		// One renewal interval is 300 ms; allow generous slack for a loaded CI box.
		assert.Less(t, time.Since(deleted), 300*time.Millisecond+500*time.Millisecond)
	case <-time.After(5 * time.Second):
		t.Fatal("loss not reported")
	}
}

// CheckNow renews a lease at once: a hold deleted behind the holder's back
// is found gone within a round trip, not at the next renewal (a minute away
// here), while a lease still held stays watched.
func TestCheckNowFindsALossAtOnce(t *testing.T) {
	f := newFixture(t)
	key := redistest.Name(t)
	_, lost := f.hold(t, key, 3*time.Minute, true)
	_, kept := f.hold(t, key+":kept", 3*time.Minute, true)
	require.NoError(t, f.rc.Do(context.Background(), f.rc.B().Del().Key(key).Build()).Error())
	start := time.Now()
	f.sched.CheckNow()
	select {
	case err := <-lost:
		assert.ErrorIs(t, err, lease.ErrNotHeld)
		t.Logf("found gone %v after CheckNow", time.Since(start).Round(time.Microsecond))
	case <-time.After(5 * time.Second):
		t.Fatal("CheckNow did not renew the lease: the loss waits for the next renewal")
	}
	time.Sleep(50 * time.Millisecond)
	select {
	case err := <-kept:
		t.Fatalf("the lease still held was lost: %v", err)
	default:
	}
	assert.Equal(t, 1, f.sched.Len(), "the held lease is still watched")
	assert.Greater(t, f.pttl(key+":kept"), 2*time.Minute, "the held lease's renewal kept its expiry")
}

func TestRemoveStopsRenewal(t *testing.T) {
	f := newFixture(t)
	key := redistest.Name(t)
	l, lost := f.hold(t, key, 300*time.Millisecond, true)
	require.True(t, f.sched.Remove(l))
	assert.False(t, f.sched.Remove(l), "second Remove")
	time.Sleep(600 * time.Millisecond)
	assert.LessOrEqual(t, f.pttl(key), time.Duration(0), "a removed lease must not be renewed")
	select {
	case err := <-lost:
		t.Fatalf("removed lease reported lost: %v", err)
	default:
	}
}

func TestRenewalsAreBatched(t *testing.T) {
	if !target.Real() {
		t.Skip("miniredis has no INFO commandstats; " + redisserver.InstallHint)
	}
	f := newFixture(t)
	var lostCount atomic.Int32
	const n = 250
	name := redistest.Name(t)
	for i := range n {
		l, _ := f.hold(t, name+":"+strconv.Itoa(i), time.Second, true)
		l.Lost = lease.ReportFunc(func(error) { lostCount.Add(1) })
	}
	calls := func() int64 { return redistest.CommandCalls(t, f.rc, "evalsha") }
	time.Sleep(700 * time.Millisecond) // let the leases fall into step
	before := calls()
	time.Sleep(time.Second) // three renewal intervals
	made := calls() - before
	// 250 leases need 3 calls per round; 3 intervals give at most 4 rounds.
	assert.LessOrEqual(t, made, int64(12), "renewal calls for %d leases over 3 intervals", n)
	assert.Greater(t, made, int64(0), "no renewals at all")
	assert.Zero(t, lostCount.Load())
}

// TestCurrent checks that a lease is current while watched and before its
// deadline, and not once its deadline has passed, even before the scheduler
// has reported the loss (as after a pause of the whole process).
func TestCurrent(t *testing.T) {
	f := newFixture(t)
	name := redistest.Name(t)
	l, _ := f.hold(t, name, time.Minute, true)
	assert.True(t, f.sched.Current(l))
	require.True(t, f.sched.Remove(l))
	assert.False(t, f.sched.Current(l), "removed")

	// A lease whose request went out a TTL ago: its deadline is now.
	stale := &lease.Lease{Key: name + ":stale", TTL: time.Hour, Lost: lease.ReportFunc(func(error) {})}
	f.sched.Add(stale, time.Now().Add(-time.Hour))
	assert.False(t, f.sched.Current(stale), "past its deadline")
	f.sched.Remove(stale)
}

// A replaced lease stops being renewed or reported; its successor keeps the
// hold alive from the old one's deadline on and is reported lost in its
// place. A lease past its deadline or removed cannot be replaced.
func TestReplace(t *testing.T) {
	f := newFixture(t)
	key := redistest.Name(t)
	old, oldLost := f.hold(t, key, 600*time.Millisecond, true)
	nextLost := make(chan error, 1)
	next := &lease.Lease{Key: key, Keys: old.Keys, Args: old.Args, TTL: old.TTL, Renew: old.Renew,
		Lost: lease.ReportFunc(func(cause error) { nextLost <- cause })}
	require.True(t, f.sched.Replace(old, next))
	assert.False(t, f.sched.Current(old), "the replaced lease")
	assert.True(t, f.sched.Current(next))
	assert.False(t, f.sched.Remove(old), "the replaced lease is no longer watched")
	assert.Equal(t, 1, f.sched.Len())
	lowest := time.Hour
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		lowest = min(lowest, f.pttl(key))
	}
	assert.Greater(t, lowest, 150*time.Millisecond, "the successor renews the hold")
	require.NoError(t, f.rc.Do(context.Background(), f.rc.B().Del().Key(key).Build()).Error())
	select {
	case err := <-nextLost:
		assert.ErrorIs(t, err, lease.ErrNotHeld)
	case <-time.After(5 * time.Second):
		t.Fatal("the successor's loss was not reported")
	}
	select {
	case err := <-oldLost:
		t.Fatalf("the replaced lease was reported lost: %v", err)
	default:
	}

	third := &lease.Lease{Key: key, TTL: time.Hour, Lost: lease.ReportFunc(func(error) {})}
	assert.False(t, f.sched.Replace(next, third), "a lost lease")
	stale := &lease.Lease{Key: key + ":stale", TTL: time.Hour, Lost: lease.ReportFunc(func(error) {})}
	f.sched.Add(stale, time.Now().Add(-time.Hour))
	assert.False(t, f.sched.Replace(stale, third), "a lease past its deadline")
	assert.False(t, f.sched.Current(third))
	f.sched.Remove(stale)
}

// stateRenew is a renewal script that checks a state: KEYS[i] is a string
// key, ARGV[2i-1] the value it should hold, ARGV[2i] the lease. It replies 0
// when the key is gone, 2 when it holds another value (and extends it), 1
// otherwise.
var stateRenew = func() *scripts.Script {
	src := `local r = {}
for i, key in ipairs(KEYS) do
	local v = redis.call('get', key)
	if not v then r[i] = 0 else
		redis.call('pexpire', key, ARGV[2 * i])
		if v == ARGV[2 * i - 1] then r[i] = 1 else r[i] = 2 end
	end
end
return r`
	var sum [sha1.Size]byte
	fips140.WithoutEnforcement(func() { sum = sha1.Sum([]byte(src)) }) // a test's script, in FIPS 140-3 mode too
	return &scripts.Script{Name: "state_renew", Source: src, SHA1: hex.EncodeToString(sum[:])}
}()

// A renewal that finds another state than its Args is a loss, unless the
// holder said it was changing that state, or changed the Args since the
// renewal was sent.
func TestRenewalChecksState(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	key := redistest.Name(t)
	set := func(v string) {
		require.NoError(t, f.rc.Do(ctx, f.rc.B().Set().Key(key).Value(v).Px(time.Second).Build()).Error())
	}
	set("v1")
	lost := make(chan error, 1)
	l := &lease.Lease{Key: key, Renew: stateRenew, Keys: []string{key}, Args: []string{"v1", "300"}, TTL: 300 * time.Millisecond,
		Lost: lease.ReportFunc(func(cause error) { lost <- cause })}
	f.sched.Add(l, time.Now())
	quiet := func(d time.Duration) {
		t.Helper()
		select {
		case err := <-lost:
			t.Fatalf("lease lost: %v", err)
		case <-time.After(d):
		}
	}
	quiet(500 * time.Millisecond)
	// The holder changes the state with a call of its own.
	f.sched.Changing(l)
	set("v2")
	quiet(500 * time.Millisecond)
	f.sched.Update(l, []string{"v2", "300"})
	quiet(500 * time.Millisecond)
	// Someone else changes it.
	set("v3")
	select {
	case err := <-lost:
		assert.ErrorIs(t, err, lease.ErrNotHeld)
	case <-time.After(5 * time.Second):
		t.Fatal("a state changed behind the holder's back went unnoticed")
	}
}

// Every shortens the renewal period of a lease; a Fixed lease is renewed
// (its hold checked) without its deadline moving, and is lost when that
// passes.
func TestFixedLeaseRenewedEvery(t *testing.T) {
	f := newFixture(t)
	var rounds atomic.Int32
	sched := lease.New(f.runner, false, slog.Default(), lease.OnBatch(func(lease.Batch) { rounds.Add(1) }))
	defer sched.Close()
	key := redistest.Name(t)
	require.NoError(t, f.rc.Do(context.Background(), f.rc.B().Hset().Key(key).FieldValue().FieldValue("f:1", "1").Build()).Error())
	lost := make(chan error, 1)
	start := time.Now()
	l := &lease.Lease{Key: key, Keys: []string{key}, Args: []string{"f:1", "60000"}, TTL: 900 * time.Millisecond,
		Every: 100 * time.Millisecond, Fixed: true, Renew: scripts.MutexRenew,
		Lost: lease.ReportFunc(func(cause error) { lost <- cause })}
	sched.Add(l, start)
	select {
	case err := <-lost:
		assert.ErrorIs(t, err, lease.ErrExpired, "a fixed lease ends at its deadline")
		assert.GreaterOrEqual(t, time.Since(start), 850*time.Millisecond)
	case <-time.After(5 * time.Second):
		t.Fatal("a fixed lease outlived its deadline: its renewals extended it")
	}
	assert.GreaterOrEqual(t, rounds.Load(), int32(5), "renewed every 100 ms, not every 300 ms")
}

// A renewer that answers as told: renewed with a validity, gone, or failing.
type fakeRenewer struct {
	mode     atomic.Int32 // 0 renewed, 1 gone, 2 failing
	validity time.Duration
	calls    atomic.Int64
}

func (r *fakeRenewer) RenewLease(ctx context.Context) (time.Time, time.Duration, bool, error) {
	r.calls.Add(1)
	sent := time.Now()
	switch r.mode.Load() {
	case 1:
		return sent, 0, false, nil
	case 2:
		<-ctx.Done() // a server that does not answer
		return sent, 0, false, ctx.Err()
	}
	return sent, r.validity, true, nil
}

// A lease that renews itself (a quorum's hold): kept alive while its renewer
// renews it, for the validity each renewal reports; lost when the renewer
// says the hold is gone; and, when the renewals fail, lost by the deadline
// of the last validity.
func TestLeaseRenewer(t *testing.T) {
	f := newFixture(t)
	r := &fakeRenewer{validity: 250 * time.Millisecond}
	lost := make(chan error, 1)
	name := redistest.Name(t)
	l := &lease.Lease{Key: name, Renewer: r, TTL: 300 * time.Millisecond,
		Lost: lease.ReportFunc(func(cause error) { lost <- cause })}
	f.sched.AddWithin(l, time.Now(), r.validity)
	select {
	case err := <-lost:
		t.Fatalf("lost while renewed: %v", err)
	case <-time.After(time.Second):
	}
	assert.GreaterOrEqual(t, r.calls.Load(), int64(3), "renewed every third of the lease")
	assert.True(t, f.sched.Current(l))

	r.mode.Store(2)
	failing := time.Now()
	select {
	case err := <-lost:
		require.ErrorIs(t, err, lease.ErrExpired)
		assert.Less(t, time.Since(failing), 5*time.Second)
	case <-time.After(5 * time.Second):
		t.Fatal("a lease whose renewals fail was not lost at its deadline")
	}
	assert.False(t, f.sched.Current(l))

	r2 := &fakeRenewer{validity: 250 * time.Millisecond}
	r2.mode.Store(1)
	l2 := &lease.Lease{Key: name + "2", Renewer: r2, TTL: 300 * time.Millisecond,
		Lost: lease.ReportFunc(func(cause error) { lost <- cause })}
	f.sched.AddWithin(l2, time.Now(), r2.validity)
	select {
	case err := <-lost:
		require.ErrorIs(t, err, lease.ErrNotHeld, "the renewer said the hold is gone")
	case <-time.After(5 * time.Second):
		t.Fatal("a lease whose renewer found the hold gone was not lost")
	}
}

// growRenew is a renewal script for one lease that needs ARGV[1] keys: with
// fewer it replies -ARGV[1], as rw_renew asks for a read hold's timeout keys;
// with enough it extends KEYS[1] by ARGV[2] ms.
var growRenew = func() *scripts.Script {
	src := `if #KEYS < tonumber(ARGV[1]) then return {-tonumber(ARGV[1])} end
redis.call('pexpire', KEYS[1], ARGV[2])
return {1}`
	var sum [sha1.Size]byte
	fips140.WithoutEnforcement(func() { sum = sha1.Sum([]byte(src)) })
	return &scripts.Script{Name: "grow_renew", Source: src, SHA1: hex.EncodeToString(sum[:])}
}()

// A renewal that asks for more keys is sent again at once with what Grow
// gives; a lease whose Grow gives too few is not renewed, and ends at its
// deadline.
func TestRenewalGrowsItsKeys(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name   string
		grow   func(n int) int // the keys Grow declares for n
		expire bool
	}{
		{"enough", func(n int) int { return n }, false},
		{"too few", func(n int) int { return n - 1 }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := redistest.Name(t)
			require.NoError(t, f.rc.Do(context.Background(), f.rc.B().Set().Key(key).Value("1").Px(300*time.Millisecond).Build()).Error())
			lost := make(chan error, 1)
			var grown atomic.Int32
			l := &lease.Lease{Key: key, Renew: growRenew, Keys: []string{key}, Args: []string{"3", "300"}, TTL: 300 * time.Millisecond,
				Lost: lease.ReportFunc(func(cause error) { lost <- cause })}
			l.Grow = func(n int) ([]string, []string) {
				grown.Add(1)
				keys := make([]string, tc.grow(n))
				for i := range keys {
					keys[i] = key
				}
				return keys, []string{"3", "300"}
			}
			f.sched.Add(l, time.Now())
			select {
			case err := <-lost:
				require.True(t, tc.expire, "lost: %v", err)
				assert.ErrorIs(t, err, lease.ErrExpired, "asking again after growing is a failure, not a loss")
			case <-time.After(time.Second):
				require.False(t, tc.expire, "a lease that never renewed outlived its deadline")
				assert.Positive(t, f.pttl(key), "renewed")
				assert.EqualValues(t, 1, grown.Load(), "grown once")
				f.sched.Remove(l)
			}
		})
	}
}
