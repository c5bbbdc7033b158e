package redisynctest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync/internal/redisserver"
)

// recorder is a testing.TB that keeps what Errorf reports.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// leaky sets leakWait to wait for the test, takes the baseline, and
// returns it with a rueidis client that runs goroutines a check reports
// until it is closed (the test's end closes it too).
func leaky(t *testing.T, wait time.Duration) (base map[string]bool, rc rueidis.Client) {
	saved := leakWait
	leakWait = wait
	t.Cleanup(func() { leakWait = saved })
	target, err := redisserver.StartStandalone()
	require.NoError(t, err)
	t.Cleanup(func() { _ = target.Stop() })
	base = goroutines()
	baseline = base
	rc, err = target.NewClient()
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	ctx, cancel := context.WithCancel(context.Background()) // a context that can be cancelled, without a deadline, starts rueidis's pipelining goroutines
	t.Cleanup(cancel)
	require.NoError(t, rc.Do(ctx, rc.B().Ping().Build()).Error())
	return base, rc
}

// checkLeaks reports a rueidis client left open, with the goroutines it
// runs, and nothing once it is closed.
func TestCheckLeaks(t *testing.T) {
	base, rc := leaky(t, 300*time.Millisecond)

	open := &recorder{TB: t}
	checkLeaks(open)
	require.Len(t, open.errors, 1, "the open client's goroutines are reported")
	assert.Contains(t, open.errors[0], "github.com/redis/rueidis")

	rc.Close()
	baseline = base // the check above dropped it
	closed := &recorder{TB: t}
	checkLeaks(closed)
	assert.Empty(t, closed.errors, "nothing once the client is closed")
	for g := range goroutines() {
		assert.False(t, ours(g) && strings.Contains(g, "checkLeaks"), "the check does not count itself")
	}
}

// A test that starts while the last one's check runs is not reported: the
// check gives up, keeping its baseline, and the new test's end checks again.
// (Its start once replaced the baseline under the running check: a data
// race, and the new test's goroutines counted as leaks.)
func TestCheckLeaksYieldsToANewTest(t *testing.T) {
	base, rc := leaky(t, 10*time.Second)
	defer func() { baseline = nil }()

	go func() {
		time.Sleep(200 * time.Millisecond)
		mu.Lock()
		live++ // as start does
		mu.Unlock()
	}()
	began := time.Now()
	during := &recorder{TB: t}
	checkLeaks(during)
	assert.Empty(t, during.errors, "a test started meanwhile: nothing reported")
	assert.Less(t, time.Since(began), leakWait, "the check gave up when the test started")
	mu.Lock()
	assert.Equal(t, base, baseline, "the baseline is kept for the new test's end")
	live--
	mu.Unlock()

	rc.Close()
	after := &recorder{TB: t}
	checkLeaks(after)
	assert.Empty(t, after.errors, "the client closed: nothing left")
	mu.Lock()
	assert.Nil(t, baseline, "dropped once checked")
	mu.Unlock()
}
