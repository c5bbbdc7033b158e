package redisync_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync/internal/scripts"
)

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
