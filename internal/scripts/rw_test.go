package scripts_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redistest"
	"github.com/go-redisync/redisync/internal/scripts"
)

// rwState is what the tests below read of an RWMutex: the lock hash, its
// PTTL, and the PTTL of each timeout key named.
type rwState struct {
	Hash    map[string]string
	PTTL    int64
	Expires map[string]int64
}

func readRW(t *testing.T, rc rueidis.Client, l layout.RW, keys ...string) rwState {
	t.Helper()
	ctx := context.Background()
	s := rwState{Expires: map[string]int64{}}
	var err error
	s.Hash, err = rc.Do(ctx, rc.B().Hgetall().Key(l.Key).Build()).AsStrMap()
	require.NoError(t, err)
	s.PTTL, err = rc.Do(ctx, rc.B().Pttl().Key(l.Key).Build()).AsInt64()
	require.NoError(t, err)
	for _, k := range keys {
		s.Expires[k], err = rc.Do(ctx, rc.B().Pttl().Key(k).Build()).AsInt64()
		require.NoError(t, err)
	}
	return s
}

// timeoutKey names field's i-th timeout key at l.
func timeoutKey(l layout.RW, field string, i int) string {
	return l.Timeouts(field) + ":" + strconv.Itoa(i)
}

// eval runs script with keys and args as EVAL does, and returns its reply.
func eval(t *testing.T, rc rueidis.Client, s *scripts.Script, keys []string, args ...string) rueidis.RedisResult {
	t.Helper()
	return rc.Do(context.Background(), rc.B().Eval().Script(s.Source).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build())
}

// asked returns the key names of an asking reply {"keys", name...}.
func asked(t *testing.T, res rueidis.RedisResult) []string {
	t.Helper()
	v, err := res.AsStrSlice()
	require.NoError(t, err, "an asking reply")
	require.NotEmpty(t, v)
	require.Equal(t, "keys", v[0])
	return v[1:]
}

// A final read release that leaves other readers needs their timeout keys,
// which its call does not know: the first attempt asks for them and changes
// nothing, the next one declares them, and the lock's expiry becomes the
// longest remaining read lease, as Redisson's unlock sets it.
func TestReadReleaseAsksForOtherReaders(t *testing.T) {
	r, rc := newRunner(t)
	ctx := context.Background()
	l := layout.RWOf(redistest.Name(t))
	for _, field := range []string{"a:1", "b:1"} {
		got, err := r.AcquireRead(ctx, &l, scripts.Hold{Field: field, LeaseMS: "10000"}, "", false)
		require.NoError(t, err)
		require.Equal(t, scripts.Acquired, got.Outcome)
	}
	b1 := timeoutKey(l, "b:1", 1)
	require.NoError(t, rc.Do(ctx, rc.B().Pexpire().Key(b1).Milliseconds(3000).Build()).Error())

	// The script itself: asked, it writes nothing.
	a1 := timeoutKey(l, "a:1", 1)
	latch := l.Latch + ":a:1"
	keys := []string{l.Key, l.Channel, latch, a1}
	args := []string{"a:1", "1", "0", "publish", "5000", "0", l.Tagged, "0"}
	before := readRW(t, rc, l, a1, b1, latch)
	assert.ElementsMatch(t, []string{a1, b1}, asked(t, eval(t, rc, scripts.RWReadUnlock, keys, args...)),
		"every key the release needs beyond the fixed ones")
	after := readRW(t, rc, l, a1, b1, latch)
	assert.Equal(t, before.Hash, after.Hash, "an asking attempt changes nothing")
	assert.EqualValues(t, -2, after.Expires[latch], "an asking attempt latches nothing")
	assert.Positive(t, after.Expires[a1], "an asking attempt deletes no timeout key")

	// The call: it asks, then declares, and remembers b's keys.
	seen := new(scripts.Readers)
	got, err := r.ReleaseRead(ctx, &l, &scripts.Release{Field: "a:1", From: 1, Latch: "5000"}, seen)
	require.NoError(t, err)
	assert.EqualValues(t, 1, got.Status)
	s := readRW(t, rc, l, a1)
	assert.NotContains(t, s.Hash, "a:1")
	assert.EqualValues(t, -2, s.Expires[a1])
	assert.LessOrEqual(t, s.PTTL, int64(3000), "the lock expires with b's remaining lease, not a's")
	assert.Positive(t, s.PTTL)

	// A release that still finds readers it was not told of, on its last
	// attempt, settles: it releases, and the lock keeps its expiry.
	_, err = r.AcquireRead(ctx, &l, scripts.Hold{Field: "c:1", LeaseMS: "10000"}, "", false)
	require.NoError(t, err)
	require.NoError(t, rc.Do(ctx, rc.B().Pexpire().Key(l.Key).Milliseconds(20000).Build()).Error())
	c1 := timeoutKey(l, "c:1", 1)
	keys = []string{l.Key, l.Channel, l.Latch + ":c:1", c1}
	args = []string{"c:1", "1", "0", "publish", "5000", "0", l.Tagged, "1"}
	n, err := eval(t, rc, scripts.RWReadUnlock, keys, args...).AsInt64()
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "released")
	s = readRW(t, rc, l, c1)
	assert.NotContains(t, s.Hash, "c:1")
	assert.EqualValues(t, -2, s.Expires[c1])
	assert.Greater(t, s.PTTL, int64(10000), "settled without b's keys: the lock keeps its expiry")
}

// A read acquire declares the timeout keys of the holds it expects; a hold
// with more (its count is not what the call expects) makes the script ask,
// writing nothing, and the call declares them all: every timeout key gets
// the new lease.
func TestReadAcquireAsksForItsTimeoutKeys(t *testing.T) {
	r, rc := newRunner(t)
	ctx := context.Background()
	l := layout.RWOf(redistest.Name(t))
	for count := range 3 {
		got, err := r.AcquireRead(ctx, &l, scripts.Hold{Field: "a:1", Count: count, LeaseMS: "10000"}, "", false)
		require.NoError(t, err)
		require.Equal(t, scripts.Acquired, got.Outcome)
	}
	var timeouts []string
	for i := 1; i <= 3; i++ {
		timeouts = append(timeouts, timeoutKey(l, "a:1", i))
		require.NoError(t, rc.Do(ctx, rc.B().Pexpire().Key(timeouts[i-1]).Milliseconds(2000).Build()).Error())
	}

	prefix := l.Timeouts("a:1")
	keys := []string{l.Key, l.Writers, l.Latch + ":a:1", timeouts[0]}
	res := eval(t, rc, scripts.RWReadLock, keys, "10000", "a:1", "", "0", "0", prefix)
	assert.Equal(t, timeouts, asked(t, res))
	for k, ms := range readRW(t, rc, l, timeouts...).Expires {
		assert.LessOrEqual(t, ms, int64(2000), "%s: an asking attempt extends nothing", k)
	}

	// A first acquire (count 0) that finds its field there, three holds deep:
	// an earlier attempt took it. It adopts the hold, and its lease.
	got, err := r.AcquireRead(ctx, &l, scripts.Hold{Field: "a:1", LeaseMS: "10000"}, "", false)
	require.NoError(t, err)
	assert.Equal(t, scripts.Acquired, got.Outcome)
	for k, ms := range readRW(t, rc, l, timeouts...).Expires {
		assert.Greater(t, ms, int64(5000), "%s has the new lease", k)
	}
}

// rw_renew renews a reader only with every one of its timeout keys declared;
// one it was not given makes its reply -count, with nothing renewed.
func TestReadRenewalAsksForItsTimeoutKeys(t *testing.T) {
	r, rc := newRunner(t)
	ctx := context.Background()
	tag := "{" + redistest.Name(t) + "}"
	l, w := layout.RWOf(tag+":r"), layout.RWOf(tag+":w") // one slot
	for count := range 3 {
		_, err := r.AcquireRead(ctx, &l, scripts.Hold{Field: "a:1", Count: count, LeaseMS: "2000"}, "", false)
		require.NoError(t, err)
	}
	_, err := r.AcquireWrite(ctx, &w, scripts.Hold{Field: "w:1:write", LeaseMS: "2000"}, "3000", false)
	require.NoError(t, err)
	renew := func(n int) []int64 {
		keys, args := scripts.ReadRenewal(&l, "a:1", "10000", n)
		wkeys, wargs := scripts.WriteRenewal(&w, "w:1:write", "10000")
		got, err := eval(t, rc, scripts.RWRenew, append(keys, wkeys...), append(args, wargs...)...).AsIntSlice()
		require.NoError(t, err)
		return got
	}
	timeouts := []string{timeoutKey(l, "a:1", 1), timeoutKey(l, "a:1", 2), timeoutKey(l, "a:1", 3)}

	assert.Equal(t, []int64{-3, 1}, renew(2), "three holds, two declared: the reader asks; the writer is renewed")
	for k, ms := range readRW(t, rc, l, timeouts...).Expires {
		assert.LessOrEqual(t, ms, int64(2000), "%s: nothing renewed for the reader", k)
	}
	assert.Equal(t, []int64{1, 1}, renew(5), "more declared than needed")
	for k, ms := range readRW(t, rc, l, timeouts...).Expires {
		assert.Greater(t, ms, int64(5000), "%s has the new lease", k)
	}
}
