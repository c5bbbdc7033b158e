package redisync

import (
	"context"

	"github.com/go-redisync/redisync/internal/mutant"
	"github.com/go-redisync/redisync/internal/scripts"
)

// releaseHold leaves n holds (permits) of p's owner. It returns an error
// wrapping ErrNotHeld when the owner holds fewer here, and ctx.Err() when ctx
// ends while another call of the owner keeps it waiting (the hold is then
// unchanged) or before Redis confirmed the release (which then goes on; see
// settle).
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
	if n == 1 && c.handOver(h, p, t) {
		return nil
	}
	if h.count > n {
		h.setCount(h.count - n)
		r := release{h: h, Release: scripts.Release{Field: h.field, From: h.count + n, To: h.count}}
		rep, err, finished := c.settle(ctx, p, r)
		if !finished {
			c.settleLater(p, r, func(rep scripts.Released, err error) { c.afterRelease(p, t, rep, err, false) })
			return err
		}
		if lost := c.afterRelease(p, t, rep, err, false); lost != nil {
			err = lost
		}
		return err
	}
	if !c.leases.Remove(t.lease) && !mutant.On("unlock-any") {
		// The scheduler has just found it lost; its report is on the way.
		// The release below still frees what may be left of it in Redis.
		t.lost(ErrLeaseExpired)
	}
	r := release{h: h, Release: scripts.Release{Field: h.field, From: n, To: 0, Latch: latchTTL}}
	if h.ambiguous {
		r.Latch = tombstoneTTL
	}
	rep, err, finished := c.settle(ctx, p, r)
	c.finish(h)
	if !finished {
		c.settleLater(p, r, func(rep scripts.Released, err error) { c.afterRelease(p, t, rep, err, true) })
		return err
	}
	return c.afterRelease(p, t, rep, err, true)
}

// settle runs release r of p, repeating it after a lost reply, and returns
// its outcome; it gives up after releaseBudget. When ctx ends before Redis
// has answered (or had ended already), settle does not wait: it reports
// finished false, and the caller finishes the release with settleLater.
func (c *Client) settle(ctx context.Context, p *protocol, r release) (rep scripts.Released, err error, finished bool) {
	if ctx.Err() != nil {
		return rep, ctx.Err(), false
	}
	rctx, cancel := context.WithTimeout(ctx, releaseBudget)
	rep, err = p.release(rctx, r)
	cancel()
	if err != nil && ctx.Err() != nil {
		return rep, ctx.Err(), false
	}
	if err != nil {
		err = lockError(p.name, err)
	}
	return rep, err, true
}

// settleLater finishes a release whose caller's context ended first, in the
// background: it sends the release again, detached from that context (a
// repeat is harmless: a release acts on one hold's identity), and calls done
// with the outcome. Close waits for it.
func (c *Client) settleLater(p *protocol, r release, done func(scripts.Released, error)) {
	c.background.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), releaseBudget)
		defer cancel()
		rep, err := p.release(ctx, r)
		if err != nil {
			err = lockError(p.name, err)
			p.cfg.logger.Warn("redisync: unlock failed; the lock expires with its lease", "name", p.name, "error", err)
		}
		done(rep, err)
	})
}

// afterRelease files the outcome of a release of term t: a hold found gone
// (or, for a Semaphore, changed by someone else) is lost; a final release
// ends the term (with err when Redis could not confirm it). It wakes the
// lock's local waiters, and returns the term's end, nil while it lasts.
func (c *Client) afterRelease(p *protocol, t *term, rep scripts.Released, err error, final bool) error {
	switch {
	case rep.Status < 0 && err == nil:
		c.lose(t, ErrHoldGone)
	case final:
		t.end(err)
	}
	c.wake(p, rep.Woken, final)
	_, end := t.result()
	return end
}

// wake wakes this process's waiters of p's lock after a release: those the
// release named, for a queued lock; else, when released is set, one (or
// all, for a lock whose release lets every reader in).
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
