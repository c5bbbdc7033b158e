package redisync_test

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/redisserver"
	"github.com/go-redisync/redisync/internal/scripts"
)

// These tests attack hold identity: a command whose caller gave up still
// reaches Redis later, after the same owner's next commands (see lateClient).
// Each hold has its own identity in Redis, so such a command finds nothing of
// a newer hold to change.

// A lateClient is a rueidis client that makes the script calls a test picks
// arrive late, as rueidis's own do when the network stalls: rueidis still
// writes a command whose caller's context has ended (the caller got
// ctx.Err()), and it spreads commands over several connections, so a later
// command can overtake one whose connection stalls.
//
// A held call is not sent: its caller waits as it would for a reply and gets
// ctx.Err() when its context ends. Deliver sends it afterwards. A delayed
// reply is the other way round: the call runs at once, and its caller hears
// of it only when the test says so.
type lateClient struct {
	rueidis.Client

	mu      sync.Mutex
	rules   []*lateRule
	pending []*lateCall
}

type lateRule struct {
	sha   string
	reply bool // delay the reply instead of holding the call
	left  int  // calls still to catch
	// lose, when set, makes the call run at once and its caller get, lose
	// after the call was made, a connection's error instead of the reply
	// (the connection broke after the request was written). No Deliver.
	lose time.Duration
}

// A lateCall is a call held back by a lateClient, or one whose reply is.
type lateCall struct {
	cmd  []string // the call's words, EVALSHA first
	rule *lateRule
	done chan struct{} // closed when res (or multi) is set
	res  rueidis.RedisResult
	let  chan struct{} // closed by Deliver
	// batch is set for a call caught in a DoMulti (the renewals' batches):
	// the whole batch is held, its words here and its results in multi.
	batch [][]string
	multi []rueidis.RedisResult
	// ctx is the context the caller gave, kept to be used after the caller
	// returned, as a timer or a late reader may.
	ctx context.Context
}

// newLateClient returns a redisync Client on a lateClient for tg, and the
// lateClient.
func newLateClient(t *testing.T, tg *redisserver.Target, opts ...redisync.Option) (*redisync.Client, *lateClient) {
	t.Helper()
	lc := &lateClient{Client: newRueidis(t, tg)}
	c, err := redisync.New(lc, append([]redisync.Option{redisync.WithLogger(testLogger(t))}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() {
		lc.DeliverAll()
		_ = c.Close()
	})
	return c, lc
}

// Hold makes the next n calls of script s wait until Deliver.
func (l *lateClient) Hold(s *scripts.Script, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rules = append(l.rules, &lateRule{sha: s.SHA1, left: n})
}

// DelayReply makes the next n calls of script s run at once, with their
// replies kept from their callers until Deliver.
func (l *lateClient) DelayReply(s *scripts.Script, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rules = append(l.rules, &lateRule{sha: s.SHA1, left: n, reply: true})
}

// LoseReply makes the next n calls of script s run at once, and their
// callers get, after, the error of a connection that broke after the
// request was written: what the call did in Redis stays unknown to it.
func (l *lateClient) LoseReply(s *scripts.Script, n int, after time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rules = append(l.rules, &lateRule{sha: s.SHA1, left: n, lose: after})
}

// errLostReply is what a caller whose reply LoseReply lost gets.
var errLostReply = fmt.Errorf("lateClient: the connection broke before the reply: %w", io.ErrUnexpectedEOF)

// Caught returns how many calls are waiting for Deliver.
func (l *lateClient) Caught() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pending)
}

// Catches reports whether a call of script s waits for Deliver.
func (l *lateClient) Catches(s *scripts.Script) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, call := range l.pending {
		if call.rule.sha == s.SHA1 {
			return true
		}
	}
	return false
}

// CaughtContext returns the context the oldest caught call was made with.
func (l *lateClient) CaughtContext(t *testing.T) context.Context {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	require.NotEmpty(t, l.pending, "no call was caught")
	return l.pending[0].ctx
}

// Deliver lets the oldest caught call go (a held call is sent now; a delayed
// reply reaches its caller, if it still waits) and returns its result.
func (l *lateClient) Deliver(t *testing.T) rueidis.RedisResult {
	t.Helper()
	l.mu.Lock()
	require.NotEmpty(t, l.pending, "no call was caught")
	call := l.pending[0]
	l.pending = l.pending[1:]
	l.mu.Unlock()
	close(call.let)
	<-call.done
	return call.res
}

// DeliverOldest lets the oldest caught call of script s go and returns its
// result.
func (l *lateClient) DeliverOldest(t *testing.T, s *scripts.Script) rueidis.RedisResult {
	t.Helper()
	l.mu.Lock()
	i := slices.IndexFunc(l.pending, func(c *lateCall) bool { return c.rule.sha == s.SHA1 })
	if i < 0 {
		l.mu.Unlock()
		t.Fatalf("no call of %s was caught", s.Name)
	}
	call := l.pending[i]
	l.pending = slices.Delete(l.pending, i, i+1)
	l.mu.Unlock()
	close(call.let)
	<-call.done
	return call.res
}

// DeliverAll lets every caught call go.
func (l *lateClient) DeliverAll() {
	l.mu.Lock()
	calls := l.pending
	l.pending = nil
	l.rules = nil
	l.mu.Unlock()
	for _, call := range calls {
		close(call.let)
		<-call.done
	}
}

// DeliverAllLater lets every caught call go, in the background, d after
// the first is caught.
func (l *lateClient) DeliverAllLater(d time.Duration) {
	go func() {
		for l.Caught() == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(d)
		l.DeliverAll()
	}()
}

func (l *lateClient) catch(ctx context.Context, cmd rueidis.Completed) *lateCall {
	words := cmd.Commands()
	if len(words) < 3 || words[0] != "EVALSHA" {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, r := range l.rules {
		if r.sha != words[1] {
			continue
		}
		if r.left--; r.left == 0 {
			l.rules = append(l.rules[:i:i], l.rules[i+1:]...)
		}
		call := &lateCall{cmd: append([]string(nil), words...), rule: r, done: make(chan struct{}), let: make(chan struct{}), ctx: ctx}
		if r.lose == 0 {
			l.pending = append(l.pending, call)
		}
		return call
	}
	return nil
}

// Do runs cmd, or catches it.
func (l *lateClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	call := l.catch(ctx, cmd)
	if call == nil {
		return l.Client.Do(ctx, cmd)
	}
	if call.rule.lose > 0 {
		res := l.Client.Do(context.Background(), l.rebuild(call.cmd))
		if res.Error() != nil {
			return res
		}
		select {
		case <-time.After(call.rule.lose):
			return rueidis.NewErrorResult(errLostReply)
		case <-ctx.Done():
			return rueidis.NewErrorResult(ctx.Err())
		}
	}
	if call.rule.reply {
		go func() {
			call.res = l.Client.Do(context.Background(), l.rebuild(call.cmd))
			<-call.let
			close(call.done)
		}()
	} else {
		go func() {
			<-call.let
			call.res = l.Client.Do(context.Background(), l.rebuild(call.cmd))
			close(call.done)
		}()
	}
	select {
	case <-call.done:
		return call.res
	case <-ctx.Done():
		return rueidis.NewErrorResult(ctx.Err())
	}
}

// DoMulti runs cmds, or catches them all when one of them is caught: a
// batch of renewals is held, or its replies delayed, as one call.
func (l *lateClient) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	var call *lateCall
	for _, cmd := range cmds {
		if call = l.catch(ctx, cmd); call != nil {
			break
		}
	}
	if call == nil {
		return l.Client.DoMulti(ctx, cmds...)
	}
	for _, cmd := range cmds {
		call.batch = append(call.batch, append([]string(nil), cmd.Commands()...))
	}
	run := func() {
		again := make([]rueidis.Completed, len(call.batch))
		for i, words := range call.batch {
			again[i] = l.rebuild(words)
		}
		call.multi = l.Client.DoMulti(context.Background(), again...)
	}
	go func() {
		if call.rule.reply {
			run()
			<-call.let
		} else {
			<-call.let
			run()
		}
		close(call.done)
	}()
	select {
	case <-call.done:
		return call.multi
	case <-ctx.Done():
		out := make([]rueidis.RedisResult, len(cmds))
		for i := range out {
			out[i] = rueidis.NewErrorResult(ctx.Err())
		}
		return out
	}
}

// rebuild makes a command of an EVALSHA call's words, with its keys marked as
// keys (a cluster client routes by them).
func (l *lateClient) rebuild(words []string) rueidis.Completed {
	n, _ := strconv.Atoi(words[2])
	return l.Client.B().Arbitrary(words[:3]...).Keys(words[3 : 3+n]...).Args(words[3+n:]...).Build()
}

// ran fails the test unless a late call ran in Redis (a reply, or a nil
// reply), rather than failing there (NOSCRIPT would make a test pass for
// nothing).
func ran(t *testing.T, res rueidis.RedisResult) {
	t.Helper()
	if err := res.Error(); err != nil && !rueidis.IsRedisNil(err) {
		t.Fatalf("the late call did not run: %v", err)
	}
}

// warmUp runs every primitive once through c, so that Redis knows every
// script before a test holds a call back.
func warmUp(t *testing.T, c *redisync.Client) {
	t.Helper()
	ctx := context.Background()
	name := freshName(t) + ":warm-up"
	m := c.NewMutex(name)
	for force := range 2 {
		m.Lock()
		if force == 1 {
			_, _ = m.ForceUnlock(ctx)
		}
		m.Unlock()
	}
	f := c.NewFencedMutex(name + ":fenced")
	_, err := f.LockToken(ctx)
	require.NoError(t, err)
	f.Unlock()
	rw := c.NewRWMutex(name + ":rw")
	rw.RLock()
	//lint:ignore SA2001 running the scripts once loads them
	rw.RUnlock()
	rw.Lock()
	//lint:ignore SA2001 running the scripts once loads them
	rw.Unlock()
	fm := c.NewFairMutex(name + ":fair")
	for force := range 2 {
		fm.Lock()
		if force == 1 {
			_, _ = fm.ForceUnlock(ctx)
		}
		fm.Unlock()
	}
	s := c.NewSemaphore(name+":sem", 1)
	require.NoError(t, s.Acquire(ctx, 1))
	s.Release(1)
}

// short returns a context that ends after d.
func short(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// lateReleaseCase is a lock whose release a test holds back.
type lateReleaseCase struct {
	name    string
	release *scripts.Script
	// lock and unlock take and leave the hold through the handle under
	// test; unlock gets a context that ends before the release arrives.
	lock   func()
	unlock func(ctx context.Context) error
	err    func() error
	// rival tries to take the lock from another Client.
	rival func() bool
}

// A release whose caller gave up lands after the owner's next acquire. It
// must not end that newer hold: before hold identities, the new hold adopted
// the owner's field and the late release deleted it, and a rival got in.
func TestLateReleaseSparesNextHold(t *testing.T) {
	lease := redisync.WithLease(500 * time.Millisecond)
	c, late := newLateClient(t, standalone)
	warmUp(t, c)
	rivals, _ := newClient(t, standalone)
	name := freshName(t)
	m := c.NewMutex(name+":mutex", lease)
	fm := c.NewFairMutex(name+":fair", lease)
	w := c.NewRWMutex(name+":write", lease)
	r := c.NewRWMutex(name+":read", lease)
	for _, tc := range []lateReleaseCase{
		{name: "Mutex", release: scripts.MutexRelease, lock: m.Lock, unlock: m.UnlockContext, err: m.Err,
			rival: rivals.NewMutex(name + ":mutex").TryLock},
		{name: "FairMutex", release: scripts.FairRelease, lock: fm.Lock, unlock: fm.UnlockContext, err: fm.Err,
			rival: rivals.NewFairMutex(name + ":fair").TryLock},
		{name: "RWMutex write", release: scripts.RWWriteUnlock, lock: w.Lock, unlock: w.UnlockContext, err: w.Err,
			rival: rivals.NewRWMutex(name + ":write").TryRLock},
		{name: "RWMutex read", release: scripts.RWReadUnlock, lock: r.RLock, unlock: r.RUnlockContext, err: r.Err,
			rival: rivals.NewRWMutex(name + ":read").TryLock},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.lock()
			// The release and any repeat of it are held back.
			late.Hold(tc.release, 2)
			err := tc.unlock(short(t, 100*time.Millisecond))
			require.Error(t, err, "the release was held back")
			tc.lock() // a new hold, once the previous one is gone or its lease ran out
			for late.Caught() > 0 {
				ran(t, late.Deliver(t))
			}
			assert.False(t, tc.rival(), "a late release of the previous hold ended the current one: two holders")
			assert.NoError(t, tc.err(), "the current hold was reported lost")
			require.NoError(t, tc.unlock(context.Background()))
		})
	}
}

// An acquire whose caller gave up lands after the call undid it. It must not
// take the lock for nobody: the undo leaves a mark that refuses it.
func TestLateAcquireAfterUndoTakesNothing(t *testing.T) {
	c, late := newLateClient(t, standalone)
	warmUp(t, c)
	name := freshName(t)
	m := c.NewMutex(name + ":mutex")
	f := c.NewFencedMutex(name + ":fenced")
	fm := c.NewFairMutex(name + ":fair")
	w := c.NewRWMutex(name + ":write")
	r := c.NewRWMutex(name + ":read")
	for _, tc := range []struct {
		name    string
		acquire *scripts.Script
		lock    func(ctx context.Context) error
		locked  func(ctx context.Context) (bool, error)
	}{
		{"Mutex", scripts.MutexAcquire, m.LockContext, m.IsLocked},
		{"FencedMutex", scripts.FencedAcquire, f.LockContext, f.IsLocked},
		{"FairMutex", scripts.FairAcquire, fm.LockContext, fm.IsLocked},
		{"RWMutex write", scripts.RWWriteLock, w.LockContext, w.IsLocked},
		{"RWMutex read", scripts.RWReadLock, r.RLockContext, r.IsLocked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			late.Hold(tc.acquire, 1)
			err := tc.lock(short(t, 100*time.Millisecond))
			require.ErrorIs(t, err, context.DeadlineExceeded)
			ran(t, late.Deliver(t))
			locked, err := tc.locked(context.Background())
			require.NoError(t, err)
			assert.False(t, locked, "the late acquire took the lock after LockContext had given up: held for nobody")
		})
	}
}

// An acquire whose reply is read after the lease it set could have run out
// (its request or its reply held up): meanwhile the lock expired in Redis
// and another process took it. The late reply must not be returned as a
// hold: the call goes on waiting, and gets the lock when the other releases
// it. Seen in the chaos suite under F10 (RELIABILITY.md, Open); without the
// check in tryHold, LockContext returned nil with the other inside.
func TestMutexLateAcquireReplyIsNoHold(t *testing.T) {
	tg := standalone
	name := freshName(t)
	c, lc := newLateClient(t, tg, redisync.WithWatchdogTimeout(time.Second))
	other, _ := newClient(t, tg)
	m, rival := c.NewMutex(name), other.NewMutex(name)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	require.NoError(t, m.LockContext(ctx)) // loads the scripts: the held-up reply is no NOSCRIPT
	require.NoError(t, m.UnlockContext(ctx))
	lc.DelayReply(scripts.MutexAcquire, 1)
	got := make(chan error, 1)
	go func() { got <- m.LockContext(ctx) }()
	require.Eventually(t, func() bool { return lc.Caught() == 1 }, 5*time.Second, 5*time.Millisecond)
	time.Sleep(1300 * time.Millisecond) // past the 1 s lease: the lock expires in Redis
	require.NoError(t, rival.LockContext(ctx), "the expired lock is free")
	late := lc.Deliver(t) // the late reply: "acquired" (nil), 1.3 s ago
	require.True(t, rueidis.IsRedisNil(late.Error()), "the held-up attempt took the lock: %v", late.Error())
	select {
	case err := <-got:
		t.Fatalf("LockContext returned %v on a reply that came after its lease, with another process inside", err)
	case <-time.After(500 * time.Millisecond):
	}
	require.NoError(t, rival.UnlockContext(ctx))
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting call did not get the lock after the other released it")
	}
	n, err := m.HoldCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "held in Redis")
	require.NoError(t, m.UnlockContext(ctx))
}
