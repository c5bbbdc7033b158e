// Package bounded makes a rueidis client's calls return when their context
// ends, whatever the client waits for.
//
// rueidis returns a call at its context's deadline while the call waits for
// its reply, but not while it waits for a connection that another call is
// dialing: that dial follows the other call's context (rueidis's mux shares
// one dial per connection), so a call with 50 ms left can wait seconds for
// a server that swallows every byte. A bounded client makes the call in a
// goroutine of its own and returns ctx.Err() when ctx ends first; the call
// goes on, and its reply, if any, is dropped. Its outcome is then unknown to
// the caller, as for any call whose reply did not come in time.
//
// A call's goroutine and the little it needs come from a pool: a call that
// gets its reply in time allocates nothing here.
package bounded

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/redis/rueidis"
)

// Client is a rueidis client whose Do and DoMulti return by the end of
// their context.
type Client struct {
	rueidis.Client
}

// Wrap returns rc as a bounded Client (rc itself when it is one).
func Wrap(rc rueidis.Client) rueidis.Client {
	if b, ok := rc.(Client); ok {
		return b
	}
	return Client{Client: rc}
}

// Do sends cmd and returns its result, or ctx.Err() once ctx ends.
func (c Client) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	done := ctx.Done()
	if done == nil {
		return c.Client.Do(ctx, cmd)
	}
	r := newRequest(c.Client, ctx)
	r.cmd = cmd
	if !r.wait(done) {
		return rueidis.NewErrorResult(ctx.Err())
	}
	res := r.one
	r.free()
	return res
}

// DoMulti sends cmds and returns their results, or ctx.Err() for each once
// ctx ends.
func (c Client) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	done := ctx.Done()
	if done == nil {
		return c.Client.DoMulti(ctx, cmds...)
	}
	r := newRequest(c.Client, ctx)
	r.cmds, r.multi = cmds, true
	if !r.wait(done) {
		out := make([]rueidis.RedisResult, len(cmds))
		for i := range out {
			out[i] = rueidis.NewErrorResult(ctx.Err())
		}
		return out
	}
	res := r.many
	r.free()
	return res
}

// Who owns a request: its caller until the call answers or the caller
// leaves; the goroutine that made the call when the caller left first.
const (
	pending   = iota // the call runs and its caller waits
	answered         // the call's result is in the request, for its caller
	abandoned        // the caller left; the goroutine frees the request
)

// A request is one call made in a goroutine of its own.
type request struct {
	rc    rueidis.Client
	ctx   context.Context
	cmd   rueidis.Completed
	cmds  []rueidis.Completed
	multi bool

	one  rueidis.RedisResult
	many []rueidis.RedisResult

	state atomic.Int32
	done  chan struct{} // one token when answered
	run   func()        // r.call, bound once so that starting it allocates nothing
}

var requests sync.Pool // of *request

func init() {
	requests.New = func() any {
		r := &request{done: make(chan struct{}, 1)}
		r.run = r.call
		return r
	}
}

func newRequest(rc rueidis.Client, ctx context.Context) *request {
	r := requests.Get().(*request)
	r.rc, r.ctx = rc, ctx
	r.state.Store(pending)
	return r
}

// wait starts the call and reports whether it answered before done closed.
// When it did not, the request belongs to the call's goroutine.
func (r *request) wait(done <-chan struct{}) bool {
	go r.run()
	select {
	case <-r.done:
		return true
	case <-done:
		if r.state.CompareAndSwap(pending, abandoned) {
			return false
		}
		<-r.done // the answer came as the caller left: take it
		return true
	}
}

func (r *request) call() {
	if r.multi {
		r.many = r.rc.DoMulti(r.ctx, r.cmds...)
	} else {
		r.one = r.rc.Do(r.ctx, r.cmd)
	}
	if r.state.CompareAndSwap(pending, answered) {
		r.done <- struct{}{}
		return
	}
	r.free()
}

// free clears r, so that the pool holds no command, context or reply, and
// gives it back.
func (r *request) free() {
	r.rc, r.ctx = nil, nil
	r.cmd, r.cmds, r.multi = rueidis.Completed{}, nil, false
	r.one, r.many = rueidis.RedisResult{}, nil
	requests.Put(r)
}
