package redisync_test

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/redisserver"
	"github.com/go-redisync/redisync/internal/scripts"
)

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
