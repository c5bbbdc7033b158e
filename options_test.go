package redisync_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
)

// A nil Option is an invalid one: New and NewQuorum return an error that
// says which, and every handle constructor panics with that message.
func TestNilOption(t *testing.T) {
	rc := newRueidis(t, standalone)
	_, err := redisync.New(rc, redisync.WithLogger(testLogger(t)), nil)
	assert.EqualError(t, err, "redisync: option 2 of 2 is nil")
	_, err = redisync.NewQuorum([]rueidis.Client{rc, rc, rc}, nil)
	assert.EqualError(t, err, "redisync: option 1 of 1 is nil")

	c, _ := newClient(t, standalone)
	name := freshName(t)
	constructors := map[string]func(opt redisync.Option){
		"NewMutex":              func(opt redisync.Option) { c.NewMutex(name, opt) },
		"NewFencedMutex":        func(opt redisync.Option) { c.NewFencedMutex(name, opt) },
		"NewRWMutex":            func(opt redisync.Option) { c.NewRWMutex(name, opt) },
		"NewFairMutex":          func(opt redisync.Option) { c.NewFairMutex(name, opt) },
		"NewRedissonFairMutex":  func(opt redisync.Option) { c.NewRedissonFairMutex(name, opt) },
		"NewMultiMutex":         func(opt redisync.Option) { c.NewMultiMutex([]string{name}, opt) },
		"NewSemaphore":          func(opt redisync.Option) { c.NewSemaphore(name, 1, opt) },
		"NewCountingSemaphore":  func(opt redisync.Option) { c.NewCountingSemaphore(name, 1, opt) },
		"NewExpirableSemaphore": func(opt redisync.Option) { c.NewExpirableSemaphore(name, 1, opt) },
		"NewOnce":               func(opt redisync.Option) { c.NewOnce(name, opt) },
		"NewWaitGroup":          func(opt redisync.Option) { c.NewWaitGroup(name, opt) },
		"NewElection":           func(opt redisync.Option) { c.NewElection(name, opt) },
	}
	for constructor, make := range constructors {
		require.NotPanics(t, func() { make(redisync.WithLogger(testLogger(t))) }, constructor)
		assert.PanicsWithValue(t, "redisync: option 1 of 1 is nil", func() { make(nil) }, constructor)
	}
}

// The longest durations an option takes are honoured, not wrapped around
// when rounded up to a whole millisecond: a lock taken under a fixed lease
// or a watchdog timeout of math.MaxInt64 holds with that lease.
func TestLongestLease(t *testing.T) {
	c, _ := newClient(t, standalone)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for name, opt := range map[string]redisync.Option{
		"WithLease":           redisync.WithLease(math.MaxInt64),
		"WithWatchdogTimeout": redisync.WithWatchdogTimeout(math.MaxInt64),
	} {
		m := c.NewMutex(freshName(t), opt)
		require.NoError(t, m.LockContext(ctx), name)
		ttl, err := m.TTL(ctx)
		require.NoError(t, err)
		assert.Greater(t, ttl, 200*365*24*time.Hour, name)
		m.Unlock()
	}
}

// WithLease and WithWatchdogTimeout in one list of options contradict each
// other (a fixed lease, or one the watchdog keeps): New refuses them, and a
// handle constructor panics, instead of the later one silently winning. A
// handle's option still overrides the Client's.
func TestLeaseAndWatchdogTogether(t *testing.T) {
	const want = "redisync: WithLease and WithWatchdogTimeout given together: a lock's lease is fixed or kept by the watchdog, not both"
	rc := newRueidis(t, standalone)
	_, err := redisync.New(rc, redisync.WithLease(time.Second), redisync.WithWatchdogTimeout(time.Second))
	assert.EqualError(t, err, want)
	_, err = redisync.New(rc, redisync.WithWatchdogTimeout(time.Second), redisync.WithLease(time.Second))
	assert.EqualError(t, err, want)

	c, err := redisync.New(rc, redisync.WithWatchdogTimeout(time.Second), redisync.WithLogger(testLogger(t)))
	require.NoError(t, err)
	defer func() { _ = c.Close() }()
	name := freshName(t)
	assert.PanicsWithValue(t, want, func() { c.NewMutex(name, redisync.WithLease(time.Second), redisync.WithWatchdogTimeout(time.Second)) })
	m := c.NewMutex(name, redisync.WithLease(5*time.Second)) // overrides the Client's watchdog
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, m.LockContext(ctx))
	ttl, err := m.TTL(ctx)
	require.NoError(t, err)
	assert.Greater(t, ttl, 2*time.Second, "the handle's fixed lease, not the Client's 1 s watchdog")
	require.NoError(t, m.UnlockContext(ctx))
}
