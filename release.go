package redisync

import (
	"context"

	"github.com/go-redisync/redisync/internal/mutant"
	"github.com/go-redisync/redisync/internal/scripts"
)

// releaseHold leaves n holds (permits) of p's owner. It returns an error
// wrapping ErrNotHeld when the owner holds fewer here, and ctx.Err() when ctx
// ends while another call of the owner keeps it waiting (the hold is then
// unchanged) or before Redis confirmed the release (which then goes on).
func (c *Client) releaseHold(ctx context.Context, p *protocol, n int) error {
	h := c.ref(p.key, false)
	if h == nil {
		return lockError(p.name, ErrNotHeld)
	}
	defer c.unref(h)
	if err := h.op.Lock(ctx); err != nil {
		return err
	}
	defer h.op.Unlock()
	if n > h.count+h.lost || h.parked {
		return lockError(p.name, ErrNotHeld)
	}
	if taken := min(n, h.lost); taken > 0 { // a Semaphore's lost permits first
		if h.lost -= taken; h.lost == 0 && h.count == 0 {
			c.unref(h)
		}
		if n -= taken; n == 0 {
			return nil
		}
	}
	t := h.term.Load()
	if ended, err := t.result(); ended && !mutant.On("unlock-any") {
		// Lost or closed earlier: the owner's release acknowledges it.
		if h.setCount(h.count - n); h.count == 0 {
			c.finish(h)
		}
		return err
	}
	if n == 1 && (c.handOver(h, p, t) || c.transfer(h, p, t)) {
		return nil
	}
	if h.count > n {
		h.setCount(h.count - n)
		return c.settle(ctx, p, t, release{h: h, Release: scripts.Release{Field: t.field, From: h.count + n, To: h.count}}, false)
	}
	if !c.leases.Remove(t.lease) && !mutant.On("unlock-any") {
		// The scheduler has just found it lost; its report is on the way.
		// The release below still frees what may be left of it in Redis.
		t.lost(ErrLeaseExpired)
	}
	r := release{h: h, Release: scripts.Release{Field: t.field, From: n, To: 0, Latch: latchTTL}}
	if t.ambiguous {
		r.Latch = tombstoneTTL
	}
	c.finish(h)
	return c.settle(ctx, p, t, r, true)
}

// settle runs release r of term t (final: the hold's last) for up to
// releaseBudget and files its outcome (see afterRelease). When ctx ends
// before Redis has answered (or had ended already), settle returns ctx.Err()
// and finishes the release in the background, detached from ctx: a repeat is
// harmless, as a release acts on one hold's identity. Close waits for it.
func (c *Client) settle(ctx context.Context, p *protocol, t *term, r release, final bool) error {
	if ctx.Err() == nil {
		rctx, cancel := context.WithTimeout(ctx, releaseBudget)
		rep, err := p.release(rctx, r)
		cancel()
		if err == nil || ctx.Err() == nil {
			if err != nil {
				err = lockError(p.name, err)
			}
			return c.afterRelease(p, t, rep, err, final)
		}
	}
	c.background.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), releaseBudget)
		defer cancel()
		rep, err := p.release(ctx, r)
		if err != nil {
			err = lockError(p.name, err)
			p.cfg.logger.Warn("redisync: unlock failed; the lock expires with its lease", "name", p.name, "error", err)
		}
		c.afterRelease(p, t, rep, err, final)
	})
	return ctx.Err()
}

// afterRelease files the outcome of a release of term t: a hold found gone
// (or, for a Semaphore, changed by someone else) is lost; a final release
// ends the term (with err when Redis could not confirm it). It wakes the
// lock's local waiters, and returns the term's end if it ended, else err.
func (c *Client) afterRelease(p *protocol, t *term, rep scripts.Released, err error, final bool) error {
	switch {
	case rep.Status < 0 && err == nil:
		c.lose(t, ErrHoldGone)
	case final:
		t.end(err)
	}
	c.wake(p, rep.Woken, final)
	if _, end := t.result(); end != nil {
		return end
	}
	return err
}

// wake wakes this process's waiters of p's lock after a release: those it
// named (a queued lock), else, when released is set, one (or all: wakeAll).
func (c *Client) wake(p *protocol, woken []string, released bool) {
	switch {
	case p.queued:
		for _, tag := range woken {
			c.notify.WakeTag(p.channel, tag)
		}
	case !released:
	case p.wakeAll:
		c.notify.WakeAll(p.channel)
	default:
		c.notify.WakeOne(p.channel)
	}
}
