package redisync_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/redisserver"
	"github.com/go-redisync/redisync/internal/redistest"
	"github.com/go-redisync/redisync/internal/scripts"
)

// proxied returns a Client whose connections pass through a proxy that can
// swallow replies, and a plain rueidis client to look at the server directly.
func proxied(t *testing.T) (*redisync.Client, *redistest.Proxy) {
	t.Helper()
	p, err := redistest.StartProxy(standalone.Addrs[0])
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	through := &redisserver.Target{Addrs: []string{p.Addr}, Mini: standalone.Mini}
	c, _ := newClient(t, through)
	// Load the scripts, so that a request whose reply is dropped has run
	// rather than failed with NOSCRIPT.
	warm := c.NewMutex(freshName(t) + ":warm-up")
	warm.Lock()
	//lint:ignore SA2001 taking the lock once loads the scripts
	warm.Unlock()
	return c, p
}

// An acquire whose reply is lost after the script ran has taken the lock.
// LockContext, giving up on the error, must release it before returning: no
// hold may outlive the failed call.
func TestMutexAmbiguousAcquireIsUndone(t *testing.T) {
	c, p := proxied(t)
	name := freshName(t)
	_, rc := newClient(t, standalone)
	m := c.NewMutex(name)
	// Every retry's reply is lost too, until LockContext gives up.
	p.DropReplies(scripts.MutexAcquire.SHA1)
	defer p.StopDropping()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	err := m.LockContext(ctx)
	p.StopDropping()
	require.Error(t, err, "every acquire reply was lost")
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
	assert.Positive(t, p.Dropped())
	exists, err2 := rc.Do(context.Background(), rc.B().Exists().Key(name).Build()).AsInt64()
	require.NoError(t, err2)
	assert.Zero(t, exists, "LockContext failed with %v but left the lock behind", err)
}

// Lock does not give up: it repeats the same attempt, which must not count a
// second hold when the first one took the lock.
func TestMutexAmbiguousAcquireIsRepeatedOnce(t *testing.T) {
	c, p := proxied(t)
	name := freshName(t)
	m := c.NewMutex(name)
	p.DropNextReply(scripts.MutexAcquire.SHA1)
	m.Lock()
	assert.EqualValues(t, 1, p.Dropped(), "the acquire reply was not dropped")
	n, err := m.HoldCount(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, n, "a repeated acquire must not count twice")
	m.Unlock()
	locked, err := m.IsLocked(context.Background())
	require.NoError(t, err)
	assert.False(t, locked)
}

// A release whose reply is lost is sent again with the same request id and
// answers as the first attempt did: a clean release, not a loss.
func TestMutexAmbiguousReleaseIsIdempotent(t *testing.T) {
	c, p := proxied(t)
	name := freshName(t)
	m := c.NewMutex(name)
	m.Lock()
	p.DropNextReply(scripts.MutexRelease.SHA1)
	require.NoError(t, m.UnlockContext(context.Background()))
	assert.EqualValues(t, 1, p.Dropped(), "the release reply was not dropped")
	assert.NoError(t, m.Err(), "a retried release must not be taken for a loss")
	locked, err := m.IsLocked(context.Background())
	require.NoError(t, err)
	assert.False(t, locked)
}

// loadScripts loads scripts on the standalone server, so that a request
// whose reply a proxy drops has run rather than failed with NOSCRIPT.
func loadScripts(t *testing.T, list ...*scripts.Script) {
	t.Helper()
	rc := newRueidis(t, standalone)
	for _, s := range list {
		require.NoError(t, rc.Do(context.Background(), rc.B().ScriptLoad().Script(s.Source).Build()).Error())
	}
}

// A queueing attempt whose reply is lost is repeated with the same waiter id:
// the waiter keeps one place, not two.
func TestFairMutexAmbiguousQueueingIsRepeatedOnce(t *testing.T) {
	c, p := proxied(t)
	loadScripts(t, scripts.FairAcquire, scripts.FairRelease)
	hc, rc := newClient(t, standalone)
	name := freshName(t)
	h := hc.NewFairMutex(name)
	h.Lock()
	defer h.Unlock()
	p.DropNextReply(scripts.FairAcquire.SHA1)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	errs := make(chan error, 1)
	go func() { errs <- c.NewFairMutex(name).LockContext(ctx) }()
	waitQueued(t, rc, name, 1)
	time.Sleep(200 * time.Millisecond) // the repeated attempt has run
	q, a := queueLen(t, rc, name)
	assert.EqualValues(t, 1, q, "one waiter, one queue entry")
	assert.EqualValues(t, 1, a)
	assert.Equal(t, context.DeadlineExceeded, <-errs)
	assert.EqualValues(t, 1, p.Dropped(), "the acquire reply was not dropped")
	q, a = queueLen(t, rc, name)
	assert.Zero(t, q+a)
}

// A waiter that gives up runs its leave script; when that reply is lost the
// script runs again, and the second run must leave the queue as the first
// did: the other waiters keep their places and the holder its lock.
func TestFairMutexAmbiguousLeaveIsIdempotent(t *testing.T) {
	c, p := proxied(t)
	loadScripts(t, scripts.FairAcquire, scripts.FairRelease)
	hc, rc := newClient(t, standalone)
	name := freshName(t)
	h := hc.NewFairMutex(name)
	h.Lock()
	// Two waiters queue ahead of the one that gives up, one behind it.
	var waiting []context.CancelFunc
	errs := make(chan error, 3)
	queueOne := func() {
		oc, _ := newClient(t, standalone)
		ctx, cancel := context.WithTimeout(context.Background(), hang)
		waiting = append(waiting, cancel)
		go func() { errs <- oc.NewFairMutex(name).LockContext(ctx) }()
	}
	queueOne()
	waitQueued(t, rc, name, 1)
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- c.NewFairMutex(name).LockContext(ctx) }()
	waitQueued(t, rc, name, 2)
	queueOne()
	waitQueued(t, rc, name, 3)

	p.DropNextReply(scripts.FairRelease.SHA1)
	cancel()
	assert.Equal(t, context.Canceled, <-gaveUp)
	assert.EqualValues(t, 1, p.Dropped(), "the leave reply was not dropped")
	q, a := queueLen(t, rc, name)
	assert.EqualValues(t, 2, q, "queue length after a retried leave")
	assert.EqualValues(t, 2, a)
	locked, err := h.IsLocked(context.Background())
	require.NoError(t, err)
	assert.True(t, locked, "the holder keeps the lock")
	assert.NoError(t, h.Err())
	for _, cancel := range waiting {
		cancel()
	}
	for range waiting {
		assert.Equal(t, context.Canceled, <-errs)
	}
	h.Unlock()
}
