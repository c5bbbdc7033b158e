package scripts_test

import (
	"context"
	"crypto/fips140"
	"crypto/sha1"
	"encoding/hex"
	"os"
	"regexp"
	"strconv"
	"strings"
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

var target *redisserver.Target

func TestMain(m *testing.M) { redistest.Main(m, &target) }

// requireReal skips a test that needs what miniredis does not emulate.
func requireReal(t *testing.T, what string) {
	t.Helper()
	if !target.Real() {
		t.Skipf("miniredis lacks %s; %s", what, redisserver.InstallHint)
	}
}

func newRunner(t *testing.T) (*scripts.Runner, rueidis.Client) {
	t.Helper()
	rc, err := target.NewClient()
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	return scripts.NewRunner(rc, rc.Mode() == rueidis.ClientModeCluster), rc
}

// acquire runs mutex_acquire for the hold field, which has count holds.
func acquire(r *scripts.Runner, key, field string, count int) (scripts.Reply, error) {
	k := scripts.MutexKeysOf(layout.MutexOf(key))
	return r.AcquireMutex(context.Background(), &k, scripts.Hold{Field: field, Count: count, LeaseMS: "10000"})
}

// release runs mutex_release for the hold field from holds from to to; undo
// leaves the latch even when the hold is not there.
func release(r *scripts.Runner, key, field string, from, to int, undo bool) int64 {
	k := scripts.MutexKeysOf(layout.MutexOf(key))
	rel := scripts.Release{Field: field, From: from, To: to, Latch: "5000", Undo: undo}
	got, err := r.ReleaseMutex(context.Background(), &k, &rel)
	if err != nil {
		panic(err)
	}
	return got.Status
}

// acquired is the reply of an acquire that took its hold.
var acquired = scripts.Reply{Outcome: scripts.Acquired}

func TestMutexAcquireRelease(t *testing.T) {
	r, rc := newRunner(t)
	ctx := context.Background()
	key := redistest.Name(t)
	count := func(field string) int64 {
		n, _ := rc.Do(ctx, rc.B().Hget().Key(key).Field(field).Build()).AsInt64()
		return n
	}

	got, err := acquire(r, key, "a:1", 0)
	require.NoError(t, err)
	assert.Equal(t, acquired, got, "first acquire")
	got, _ = acquire(r, key, "a:1", 0)
	assert.Equal(t, acquired, got, "repeating the same acquire adopts its own field")
	assert.EqualValues(t, 1, count("a:1"), "repeated acquire must not inflate the count")

	got, err = acquire(r, key, "b:1", 0)
	require.NoError(t, err)
	assert.Equal(t, scripts.Busy, got.Outcome)
	assert.Greater(t, got.Value, int64(9000), "another hold gets the holder's PTTL")

	got, _ = acquire(r, key, "b:1", 1)
	assert.Equal(t, scripts.Gone, got.Outcome, "a re-entry of a hold that is gone")

	got, _ = acquire(r, key, "a:1", 1)
	assert.Equal(t, acquired, got)
	assert.EqualValues(t, 2, count("a:1"))
	_, _ = acquire(r, key, "a:1", 1)
	assert.EqualValues(t, 2, count("a:1"), "a repeated re-entry is compare-and-set: no third hold")

	assert.EqualValues(t, 0, release(r, key, "a:1", 3, 2, false))
	assert.EqualValues(t, 2, count("a:1"), "a release expecting another count changes nothing")
	assert.EqualValues(t, 0, release(r, key, "a:1", 2, 1, false), "partial release leaves the lock held")
	assert.EqualValues(t, 1, count("a:1"))

	assert.EqualValues(t, -1, release(r, key, "b:1", 1, 0, false), "another hold's release finds nothing")
	exists, _ := rc.Do(ctx, rc.B().Exists().Key(key).Build()).AsInt64()
	assert.EqualValues(t, 1, exists, "another hold's release must leave the lock intact")

	assert.EqualValues(t, 1, release(r, key, "a:1", 1, 0, false))
	assert.EqualValues(t, 1, release(r, key, "a:1", 1, 0, false), "a repeated final release answers as the first did")
	got, _ = acquire(r, key, "a:1", 0)
	assert.Equal(t, scripts.Refused, got.Outcome, "a late copy of the released hold's first acquire takes nothing")
	assert.EqualValues(t, -1, release(r, key, "c:1", 1, 0, false), "a release of a hold never taken")

	// The undo of an acquire of unknown outcome latches the field even when
	// the acquire has not arrived yet; when it arrives, it takes nothing.
	assert.EqualValues(t, -1, release(r, key, "d:1", 1, 0, true))
	got, _ = acquire(r, key, "d:1", 0)
	assert.Equal(t, scripts.Refused, got.Outcome)
	exists, _ = rc.Do(ctx, rc.B().Exists().Key(key).Build()).AsInt64()
	assert.Zero(t, exists)
}

func TestNoScriptFallback(t *testing.T) {
	r, rc := newRunner(t)
	ctx := context.Background()
	key := redistest.Name(t)
	require.NoError(t, rc.Do(ctx, rc.B().ScriptFlush().Build()).Error())
	got, err := acquire(r, key, "a:1", 0)
	require.NoError(t, err, "Exec falls back to EVAL after a flush")
	assert.Equal(t, acquired, got)

	require.NoError(t, rc.Do(ctx, rc.B().ScriptFlush().Build()).Error())
	calls := make([]scripts.Call, 5)
	for i := range calls {
		calls[i] = scripts.Call{Script: scripts.MutexRenew, Keys: []string{key}, Args: []string{"a:1", "20000"}}
	}
	for _, res := range r.ExecMulti(ctx, calls) {
		vals, err := res.AsIntSlice()
		require.NoError(t, err)
		assert.Equal(t, []int64{1}, vals)
	}
}

func TestRenewChecksOwner(t *testing.T) {
	r, rc := newRunner(t)
	ctx := context.Background()
	name := redistest.Name(t)
	for _, k := range []string{"r1", "r2", "r3"} {
		got, err := acquire(r, k+name, "a:1", 0)
		require.NoError(t, err)
		require.Equal(t, acquired, got)
	}
	vals, err := r.Exec(ctx, scripts.Call{
		Script: scripts.MutexRenew,
		Keys:   []string{"r1" + name, "r2" + name, "r3" + name},
		Args:   []string{"a:1", "60000", "b:1", "60000", "a:1", "60000"},
	}).AsIntSlice()
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 0, 1}, vals)
	pttl, _ := rc.Do(ctx, rc.B().Pttl().Key("r2"+name).Build()).AsInt64()
	assert.LessOrEqual(t, pttl, int64(10000), "a renewal with the wrong owner must not extend the lock")
	pttl, _ = rc.Do(ctx, rc.B().Pttl().Key("r1"+name).Build()).AsInt64()
	assert.Greater(t, pttl, int64(50000))
}

func TestTransient(t *testing.T) {
	_, rc := newRunner(t)
	ctx := context.Background()
	for msg, want := range map[string]bool{
		"TRYAGAIN Multiple keys request during rehashing of slot":  true,
		"READONLY You can't write against a read only replica.":    true,
		"CLUSTERDOWN The cluster is down":                          true,
		"LOADING Redis is loading the dataset in memory":           true,
		"MASTERDOWN Link with MASTER is down":                      true,
		"BUSY Redis is busy running a script.":                     true,
		"WRONGTYPE Operation against a key holding the wrong kind": false,
		"ERR unknown command":                                      false,
	} {
		err := rc.Do(ctx, rc.B().Eval().Script("return redis.error_reply(ARGV[1])").Numkeys(0).Arg(msg).Build()).Error()
		require.Error(t, err)
		assert.Equal(t, want, scripts.Transient(err), msg)
	}
	assert.False(t, scripts.Transient(context.Canceled))
}

// A refusal that means "not now" is retried until it passes.
func TestExecRetriesTransientRefusals(t *testing.T) {
	r, rc := newRunner(t)
	ctx := context.Background()
	key := redistest.Name(t)
	// The script refuses with TRYAGAIN twice (counting in a key), then runs.
	refuser := &scripts.Script{Name: "refuser", Source: `
if redis.call('incr', KEYS[1]) <= 2 then return redis.error_reply('TRYAGAIN not yet') end
return 'ran'`}
	refuser.SHA1 = sha1hex(refuser.Source)
	got, err := r.Exec(ctx, scripts.Call{Script: refuser, Keys: []string{key}}).ToString()
	require.NoError(t, err)
	assert.Equal(t, "ran", got)
	n, err := rc.Do(ctx, rc.B().Get().Key(key).Build()).AsInt64()
	require.NoError(t, err)
	assert.EqualValues(t, 3, n)
}

func sha1hex(s string) string {
	var sum [sha1.Size]byte
	fips140.WithoutEnforcement(func() { sum = sha1.Sum([]byte(s)) }) // a test's script, in FIPS 140-3 mode too
	return hex.EncodeToString(sum[:])
}

// An error raised inside a script names the script and the source line.
func TestErrorNamesScriptLine(t *testing.T) {
	requireReal(t, "Redis's error replies from scripts (with the script's line)")
	r, rc := newRunner(t)
	ctx := context.Background()
	key := redistest.Name(t)
	require.NoError(t, rc.Do(ctx, rc.B().Set().Key(key).Value("a string").Build()).Error())
	_, err := r.AcquireMutex(ctx, ptr(scripts.MutexKeysOf(layout.MutexOf(key))), scripts.Hold{Field: "a:1", LeaseMS: "1000"})
	require.Error(t, err)
	assert.Regexp(t, "^mutex_acquire.lua line [0-9]+ `.*redis.call\\('hexists'.*`: WRONGTYPE", err.Error())
	var reply *rueidis.RedisError
	assert.ErrorAs(t, err, &reply, "the server's error is still there to match")
}

// In a script that opens with a library (the Semaphore's, sem_lib), an error
// is named by the script and the file and line it comes from: the library's
// or the script's own.
func TestErrorNamesLibraryLine(t *testing.T) {
	requireReal(t, "Redis's error replies from scripts (with the script's line)")
	r, rc := newRunner(t)
	ctx := context.Background()
	l := layout.SemOf(redistest.Name(t))
	hold := scripts.Hold{Field: "a:1", LeaseMS: "1000"}

	require.NoError(t, rc.Do(ctx, rc.B().Set().Key(l.Holders).Value("a string").Build()).Error())
	_, err := r.AcquireSem(ctx, &l, "2", hold, 1, scripts.SemVersion{Write: 1})
	require.Error(t, err)
	assert.Regexp(t, "^sem_acquire.lua, in sem_lib.lua line [0-9]+ `.*redis.call\\('hkeys', holders\\).*`: WRONGTYPE", err.Error())

	require.NoError(t, rc.Do(ctx, rc.B().Del().Key(l.Holders, l.Size).Build()).Error()) // the failed call had recorded the size
	require.NoError(t, rc.Do(ctx, rc.B().Hset().Key(l.Size).FieldValue().FieldValue("f", "v").Build()).Error())
	_, err = r.AcquireSem(ctx, &l, "2", hold, 1, scripts.SemVersion{Write: 1})
	require.Error(t, err)
	own := regexp.MustCompile("^sem_acquire.lua line ([0-9]+) `local recorded = redis.call\\('get', sizeKey\\)`: WRONGTYPE").FindStringSubmatch(err.Error())
	require.NotNil(t, own, err.Error())
	src, _ := os.ReadFile("sem_acquire.lua")
	n, _ := strconv.Atoi(own[1])
	assert.Equal(t, "local recorded = redis.call('get', sizeKey)", strings.Split(string(src), "\n")[n-1], "the line number is the file's")
}

func ptr[T any](v T) *T { return &v }

// subscribe subscribes to channel (sharded on a cluster, as the scripts
// publish there) until the test ends, and returns its messages.
func subscribe(t *testing.T, rc rueidis.Client, channel string) chan string {
	t.Helper()
	msgs := make(chan string, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	sub := rc.B().Subscribe().Channel(channel).Build()
	if rc.Mode() == rueidis.ClientModeCluster {
		sub = rc.B().Ssubscribe().Channel(channel).Build()
	}
	subscribed := make(chan struct{})
	go func() {
		defer close(done)
		_ = rc.Receive(rueidis.WithOnSubscriptionHook(ctx, func(rueidis.PubSubSubscription) { close(subscribed) }), sub,
			func(m rueidis.PubSubMessage) { msgs <- m.Message })
	}()
	select {
	case <-subscribed:
	case <-time.After(5 * time.Second):
		t.Fatal("no subscription to " + channel)
	}
	return msgs
}
