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
package bounded

import (
	"context"

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
	ch := make(chan rueidis.RedisResult, 1)
	go func() { ch <- c.Client.Do(ctx, cmd) }()
	select {
	case res := <-ch:
		return res
	case <-done:
		return rueidis.NewErrorResult(ctx.Err())
	}
}

// DoMulti sends cmds and returns their results, or ctx.Err() for each once
// ctx ends.
func (c Client) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	done := ctx.Done()
	if done == nil {
		return c.Client.DoMulti(ctx, cmds...)
	}
	ch := make(chan []rueidis.RedisResult, 1)
	go func() { ch <- c.Client.DoMulti(ctx, cmds...) }()
	select {
	case res := <-ch:
		return res
	case <-done:
		out := make([]rueidis.RedisResult, len(cmds))
		for i := range out {
			out[i] = rueidis.NewErrorResult(ctx.Err())
		}
		return out
	}
}
