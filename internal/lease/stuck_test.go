package lease_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/redistest"
	"github.com/go-redisync/redisync/internal/scripts"
)

// A stuckClient's pipelined calls (the renewals) wait, whatever their
// context says, while it is stuck: as a call waits in rueidis for a
// reconnection that another caller's deadline governs.
type stuckClient struct {
	rueidis.Client
	mu    sync.Mutex
	stuck chan struct{} // closed to let the calls go; nil when not stuck
	calls int
}

func (c *stuckClient) stick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stuck = make(chan struct{})
}

func (c *stuckClient) unstick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	close(c.stuck)
	c.stuck = nil
}

func (c *stuckClient) waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

func (c *stuckClient) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.mu.Lock()
	stuck := c.stuck
	if stuck != nil {
		c.calls++
	}
	c.mu.Unlock()
	if stuck != nil {
		<-stuck
	}
	return c.Client.DoMulti(ctx, cmds...)
}

// A lease whose renewal is stuck in its client past the lease's deadline
// is reported lost at the deadline, by the scheduler's own clock: a Redis
// call never holds the report back (it did, until the call returned, and a
// rival got the lock seconds before its holder was told). The stuck
// renewal's late result changes nothing, and other leases are still
// watched meanwhile.
func TestDeadlineIsReportedWhileARenewalIsStuck(t *testing.T) {
	rc, err := target.NewClient()
	require.NoError(t, err)
	sc := &stuckClient{Client: rc}
	runner := scripts.NewRunner(sc, false)
	sched := lease.New(runner, false, slog.Default())
	defer rc.Close()
	defer sched.Close()
	f := &fixture{rc: rc, runner: runner, sched: sched}

	const ttl = 600 * time.Millisecond
	start := time.Now()
	name := redistest.Name(t)
	l, lost := f.hold(t, name, ttl, true)
	sc.stick()
	require.Eventually(t, func() bool { return sc.waiting() > 0 }, 2*time.Second, 5*time.Millisecond, "a renewal is sent")
	select {
	case err := <-lost:
		assert.ErrorIs(t, err, lease.ErrExpired)
		took := time.Since(start)
		assert.GreaterOrEqual(t, took, ttl-ttl/50-5*time.Millisecond, "reported more than the margin before the lease ran out")
		// Generous: the deadline is 600 ms; a report held up by the call
		// would come only when the test lets it go, 5 s on.
		assert.Less(t, took, ttl+400*time.Millisecond, "reported late")
	case <-time.After(5 * time.Second):
		t.Error("the lease's deadline was not reported while its renewal was stuck")
	}
	// Another lease, fixed (never renewed), is watched meanwhile.
	fixedStart := time.Now()
	_, fixedLost := f.hold(t, name+":fixed", 300*time.Millisecond, false)
	select {
	case <-fixedLost:
		assert.Less(t, time.Since(fixedStart), time.Second)
	case <-time.After(5 * time.Second):
		t.Error("a fixed lease was not reported while a renewal was stuck")
	}
	sc.unstick()
	time.Sleep(100 * time.Millisecond) // the stuck renewal's result comes back
	assert.False(t, sched.Current(l), "a renewal that came back after the deadline revived the lease")
	select {
	case err := <-lost:
		t.Errorf("reported twice: %v", err)
	default:
	}
}
