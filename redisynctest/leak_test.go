package redisynctest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

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

// checkLeaks reports a rueidis client left open, with the goroutines it
// runs, and nothing once it is closed.
func TestCheckLeaks(t *testing.T) {
	saved := leakWait
	leakWait = 300 * time.Millisecond
	defer func() { leakWait = saved }()
	target, err := redisserver.StartStandalone()
	require.NoError(t, err)
	defer func() { _ = target.Stop() }()
	baseline = goroutines()
	rc, err := target.NewClient()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background()) // a context that can end starts rueidis's pipelining goroutines
	defer cancel()
	require.NoError(t, rc.Do(ctx, rc.B().Ping().Build()).Error())

	open := &recorder{TB: t}
	checkLeaks(open)
	require.Len(t, open.errors, 1, "the open client's goroutines are reported")
	assert.Contains(t, open.errors[0], "github.com/redis/rueidis")

	rc.Close()
	closed := &recorder{TB: t}
	checkLeaks(closed)
	assert.Empty(t, closed.errors, "nothing once the client is closed")
	for g := range goroutines() {
		assert.False(t, ours(g) && strings.Contains(g, "checkLeaks"), "the check does not count itself")
	}
}
