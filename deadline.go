package redisync

import (
	"context"
	"sync/atomic"
	"time"
)

// A deadlines hands out contexts that end at least d after they are handed
// out, and at most a step more (an eighth of d, up to 250 ms): each is made
// afresh at most once a step and shared by the calls in between, so that a
// call under a context that cannot end (Lock, Unlock, TryLock) is bounded
// at no allocation of its own. A context handed out is never recycled: a
// call may derive contexts from it (a quorum's, one per server) whose timers
// and readers outlive the call, and a context that went back to a pool would
// be read, or ended, under them (a pool of them once crashed the process
// that way).
type deadlines struct {
	d, step time.Duration
	cur     atomic.Pointer[deadline]
}

// A deadline is one context a deadlines hands out.
type deadline struct {
	ctx    context.Context
	end    time.Time
	cancel context.CancelFunc // never called: the context ends by its deadline
}

// newDeadlines returns a deadlines of d.
func newDeadlines(d time.Duration) *deadlines {
	return &deadlines{d: d, step: min(d/8, 250*time.Millisecond)}
}

// get returns a context that ends between d and d plus a step from now.
func (s *deadlines) get() context.Context {
	now := time.Now()
	if c := s.cur.Load(); c != nil && c.end.Sub(now) >= s.d {
		return c.ctx
	}
	end := now.Add(s.d + s.step)
	ctx, cancel := context.WithDeadline(context.Background(), end)
	s.cur.Store(&deadline{ctx: ctx, end: end, cancel: cancel}) // of two racing stores either will do
	return ctx
}

// within returns ctx when it can end, else a context that ends between d and
// d plus a step from now: shared when ctx is [context.Background], else one
// of its own, with ctx's values, which cancel ends.
func (s *deadlines) within(ctx context.Context) (context.Context, context.CancelFunc) {
	switch {
	case ctx.Done() != nil:
		return ctx, func() {}
	case ctx == context.Background():
		return s.get(), func() {}
	}
	return context.WithTimeout(ctx, s.d)
}
