package redisync_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/state"
)

// lockCtx is what the hostile-data tests call: a lock's LockContext (a
// Semaphore's Acquire of 1), its TryLock, and its lock key.
type lockCtx struct {
	kind   string
	lock   func(ctx context.Context) error
	try    func() bool
	unlock func()
	key    string
}

func lockers(c *redisync.Client, name string) []lockCtx {
	m, f, rw, fm := c.NewMutex(name), c.NewFencedMutex(name), c.NewRWMutex(name), c.NewFairMutex(name)
	s := c.NewSemaphore(name, 2)
	return []lockCtx{
		{"Mutex", m.LockContext, m.TryLock, m.Unlock, name},
		{"FencedMutex", f.LockContext, f.TryLock, f.Unlock, name},
		{"RWMutex.read", rw.RLockContext, rw.TryRLock, rw.RUnlock, name},
		{"RWMutex.write", rw.LockContext, rw.TryLock, rw.Unlock, name},
		{"FairMutex", fm.LockContext, fm.TryLock, fm.Unlock, layout.FairOf(name).Key},
		{"Semaphore", func(ctx context.Context) error { return s.Acquire(ctx, 1) }, func() bool { return s.TryAcquire(1) },
			func() { s.Release(1) }, layout.SemOf(name).Holders},
	}
}

// A lock key holding another type (written by someone else) is an error for
// the caller at once, naming the lock: no panic, no wait, nothing changed.
func TestWrongTypeKeyIsAnError(t *testing.T) {
	ctx := context.Background()
	c, rc := newClient(t, standalone)
	name := freshName(t)
	for _, l := range lockers(c, name) {
		t.Run(l.kind, func(t *testing.T) {
			require.NoError(t, rc.Do(ctx, rc.B().Set().Key(l.key).Value("not a lock").Build()).Error())
			defer rc.Do(ctx, rc.B().Del().Key(l.key).Build())
			wctx, cancel := context.WithTimeout(ctx, hang)
			defer cancel()
			err := l.lock(wctx)
			require.Error(t, err)
			assert.NotErrorIs(t, err, context.DeadlineExceeded, "a permanent error is returned, not waited out")
			assert.Contains(t, err.Error(), name, "the error names the lock")
			assert.Contains(t, err.Error(), "WRONGTYPE")
			assert.False(t, l.try())
			v, err := rc.Do(ctx, rc.B().Get().Key(l.key).Build()).ToString()
			require.NoError(t, err)
			assert.Equal(t, "not a lock", v, "the foreign key is left alone")
		})
	}
}

// Entries rewritten by someone else do not turn into panics, hangs or leaked
// holds: a Semaphore request that is not a number is dropped as if its waiter
// were dead, and a hold count rewritten to garbage still ends with its
// release.
func TestCorruptedQueueEntries(t *testing.T) {
	ctx := context.Background()
	c, rc := newClient(t, standalone)
	name := freshName(t)
	sl := layout.SemOf(name)
	now, err := state.ServerMillis(ctx, rc)
	require.NoError(t, err)
	require.NoError(t, rc.Do(ctx, rc.B().Zadd().Key(sl.Queue).ScoreMember().ScoreMember(1, "x:w1").Build()).Error())
	require.NoError(t, rc.Do(ctx, rc.B().Zadd().Key(sl.Alive).ScoreMember().ScoreMember(float64(now+60_000), "x:w1").Build()).Error())
	require.NoError(t, rc.Do(ctx, rc.B().Hset().Key(sl.Want).FieldValue().FieldValue("x:w1", "many").Build()).Error())
	s := c.NewSemaphore(name, 2)
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	start := time.Now()
	require.NoError(t, s.Acquire(wctx, 1), "the corrupted request is dropped, not a wall")
	t.Logf("acquired behind a corrupted request after %v", time.Since(start))
	n, err := rc.Do(ctx, rc.B().Zcard().Key(sl.Queue).Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n, "the corrupted request left the queue")
	s.Release(1)
	assert.Zero(t, s.Held())

	// A hold count rewritten to garbage: the release reports it and the lock
	// is not left to the Go holder.
	m := c.NewMutex(name)
	m.Lock()
	fields, err := rc.Do(ctx, rc.B().Hkeys().Key(name).Build()).AsStrSlice()
	require.NoError(t, err)
	require.Len(t, fields, 1)
	require.NoError(t, rc.Do(ctx, rc.B().Hset().Key(name).FieldValue().FieldValue(fields[0], "garbage").Build()).Error())
	require.NoError(t, m.UnlockContext(ctx))
	n, err = rc.Do(ctx, rc.B().Exists().Key(name).Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n, "the final release deleted the lock")
}

// A very long name works like any other (Redis keys may be large).
func TestHugeName(t *testing.T) {
	c, _ := newClient(t, standalone)
	name := strings.Repeat("n", 1<<20) + uniqueSuffix()
	for _, l := range lockers(c, name) {
		t.Run(l.kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), hang)
			defer cancel()
			require.NoError(t, l.lock(ctx))
			l.unlock()
		})
	}
}

// A script refused by the server (out of memory) is an error for the
// caller; nothing is left behind, and the lock works once the server
// accepts writes again.
func TestScriptErrorReply(t *testing.T) {
	requireReal(t, standalone, "maxmemory (an OOM refusal)")
	ctx := context.Background()
	c, rc := newClient(t, standalone)
	require.NoError(t, rc.Do(ctx, rc.B().ConfigSet().ParameterValue().ParameterValue("maxmemory", "1").Build()).Error())
	restore := func() { rc.Do(ctx, rc.B().ConfigSet().ParameterValue().ParameterValue("maxmemory", "0").Build()) }
	defer restore()
	name := freshName(t)
	m := c.NewMutex(name)
	wctx, cancel := context.WithTimeout(ctx, hang)
	defer cancel()
	err := m.LockContext(wctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "OOM")
	assert.Contains(t, err.Error(), name)
	restore()
	n, err := rc.Do(ctx, rc.B().Exists().Key(name).Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n)
	require.NoError(t, m.LockContext(wctx))
	m.Unlock()
}

// Lock cannot return an error: a refusal by the server is logged at once,
// naming the lock and the refusal, and Lock goes on trying until it holds.
func TestLockLogsRefusalAtOnce(t *testing.T) {
	ctx := context.Background()
	var logged safeBuffer
	c, rc := newClient(t, standalone, redisync.WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	name := freshName(t)
	require.NoError(t, rc.Do(ctx, rc.B().Set().Key(name).Value("not a lock").Build()).Error())
	m := c.NewMutex(name)
	done := make(chan struct{})
	go func() {
		m.Lock()
		close(done)
	}()
	require.Eventually(t, func() bool { return strings.Contains(logged.String(), "WRONGTYPE") }, hang, 10*time.Millisecond,
		"the refusal was not logged")
	assert.Contains(t, logged.String(), name)
	first, _, _ := strings.Cut(logged.String(), "\n")
	assert.Contains(t, first, "attempts=1", "logged at the first refusal")
	require.NoError(t, rc.Do(ctx, rc.B().Del().Key(name).Build()).Error())
	select {
	case <-done:
	case <-time.After(hang):
		t.Fatal("Lock did not take the lock once the key was gone")
	}
	m.Unlock()
}

// safeBuffer is a bytes.Buffer for concurrent writers and readers.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
