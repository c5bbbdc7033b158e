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
// the caller, as for any call whose reply did not come in time; the error
// the call returns is a *Cut, which tells the call's own error once it
// returns (a caller can learn late that the call never left the process).
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
	if late := r.wait(done); late != nil {
		return rueidis.NewErrorResult(&Cut{err: ctx.Err(), late: late})
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
	if late := r.wait(done); late != nil {
		out := make([]rueidis.RedisResult, len(cmds))
		cut := rueidis.NewErrorResult(&Cut{err: ctx.Err(), late: late})
		for i := range out {
			out[i] = cut
		}
		return out
	}
	res := r.many
	r.free()
	return res
}

// A Cut is the error of a call that its context's end cut short: the
// context's error (errors.Is finds it), and the call's own outcome, which
// comes later.
type Cut struct {
	err  error
	late chan error
}

func (c *Cut) Error() string { return c.err.Error() }

// Unwrap returns the context's error.
func (c *Cut) Unwrap() error { return c.err }

// Late returns a channel that receives, once, the error the call itself
// returned when it did (the first of a DoMulti's; nil when every command
// had a reply).
func (c *Cut) Late() <-chan error { return c.late }

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
	late  chan error    // the call's own error, for the caller that left
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

// wait starts the call and waits for its answer or for done to close. When
// done closed first, it returns the channel that will receive the call's
// own error, and the request belongs to the call's goroutine; else nil.
func (r *request) wait(done <-chan struct{}) chan error {
	go r.run()
	select {
	case <-r.done:
		return nil
	case <-done:
		late := make(chan error, 1)
		r.late = late
		if r.state.CompareAndSwap(pending, abandoned) {
			return late
		}
		<-r.done // the answer came as the caller left: take it
		r.late = nil
		return nil
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
	r.late <- r.err()
	r.free()
}

// err returns the call's error: the first of a DoMulti's.
func (r *request) err() error {
	if !r.multi {
		return r.one.Error()
	}
	for _, res := range r.many {
		if err := res.Error(); err != nil {
			return err
		}
	}
	return nil
}

// free clears r, so that the pool holds no command, context or reply, and
// gives it back.
func (r *request) free() {
	r.rc, r.ctx, r.late = nil, nil, nil
	r.cmd, r.cmds, r.multi = rueidis.Completed{}, nil, false
	r.one, r.many = rueidis.RedisResult{}, nil
	requests.Put(r)
}
