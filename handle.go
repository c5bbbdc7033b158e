package redisync

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/scripts"
)

// A handle is what every lock handle is made of: its Client, its options, its
// name, its own owner (see [WithOwner]) and the latest hold it took. Mutex,
// RWMutex, FairMutex and Semaphore embed it.
type handle struct {
	_ noCopy

	c         *Client
	cfg       config
	primitive Primitive // what errors call it
	name      string
	key       string // the hash whose fields are the holds (a Semaphore's holders)
	owner     uint64 // the handle's own owner
	leaseMS   string
	lease     time.Duration // the lease written to Redis on each acquire

	cur  atomic.Pointer[term]     // the hold this handle took last
	self atomic.Pointer[protocol] // the handle's own owner's hold, built on first use
}

// initHandle sets up h, a new handle on the primitive called name. It
// panics if the name or an option is invalid.
func (c *Client) initHandle(h *handle, prim Primitive, name string, opts []Option) {
	if err := layout.Check(name); err != nil {
		panic("redisync: invalid lock name " + strconv.Quote(name) + ": " + err.Error())
	}
	cfg := c.cfg.with(opts)
	if cfg.err != nil {
		panic(cfg.err.Error())
	}
	if cfg.classicPubSub != c.cfg.classicPubSub {
		panic("redisync: WithShardedPubSub applies to a Client (New), not to one handle")
	}
	if cfg.name != c.cfg.name {
		panic("redisync: WithName applies to a Client (New), not to one handle")
	}
	if cfg.logger != c.cfg.logger {
		cfg.logger = cfg.logger.With("client", cfg.name) // a handle's own logger names the Client too
	}
	if c.quorum != nil {
		c.checkQuorumHandle(&cfg)
	}
	h.c, h.cfg, h.primitive, h.name, h.key, h.owner = c, cfg, prim, name, name, lastOwner.Add(1)
	h.lease = cfg.leaseTTL()
	h.leaseMS = strconv.FormatInt(h.lease.Milliseconds(), 10)
}

// Name returns the lock's name, as given to its constructor.
func (h *handle) Name() string { return h.name }

// Done returns a channel that is closed when the hold taken by the latest
// acquisition through the handle ends, by release or loss (a Semaphore's:
// once all its permits are); a closed one if the handle never acquired.
func (h *handle) Done() <-chan struct{} { return h.cur.Load().doneChan() }

// Context returns a copy of parent that is cancelled when the hold taken by
// the latest acquisition through the handle ends, the way to stop work the
// hold protects: on a loss, [context.Cause] returns an error wrapping
// [ErrLockLost] and why (as Err does); on a release, one wrapping
// [ErrNotHeld]. It is cancelled at once when the handle holds nothing. Take
// it after the acquisition, for the work under that hold; it costs no
// goroutine.
func (h *handle) Context(parent context.Context) context.Context { return h.cur.Load().context(parent) }

// Err returns nil while the hold taken by the latest acquisition through the
// handle lasts or after its clean release; after a loss, an error wrapping
// ErrLockLost and its cause ([ErrLeaseExpired], [ErrHoldGone] or
// [ErrForceUnlocked]), or ErrClosed if the Client was closed while it was
// held; after a release that Redis could not confirm, that release's error.
func (h *handle) Err() error { return h.cur.Load().errOrNil() }

// protocol returns the start of a protocol: a hold of kind on the lock key
// by owner, a lock of sort prim whose waiters wait on channel as policy says.
func (h *handle) protocol(kind holdKind, key string, owner uint64, prim Primitive, channel string, pol policy) *protocol {
	return &protocol{key: holdKey{kind: kind, name: key, owner: owner}, name: h.name, cfg: &h.cfg, cur: &h.cur,
		primitive: prim, channel: channel, policy: pol}
}

// newLease describes the lease of term t on the key keys[0] for the
// scheduler; renew renews it (unless the lease is fixed) with the term's
// field, the lease and the primitive's extra argument, if any.
func (h *handle) newLease(t *term, keys []string, renew *scripts.Script, extra ...string) *lease.Lease {
	l := &t.own
	t.args[0], t.args[1] = t.field, h.leaseMS
	args := t.args[:2]
	if len(extra) > 0 {
		t.args[2] = extra[0]
		args = t.args[:3]
	}
	*l = lease.Lease{Key: keys[0], Keys: keys, Args: args, TTL: h.lease, Lost: t}
	if h.cfg.lease == 0 {
		l.Renew = renew
	}
	return l
}

// proto returns owner's protocol, built by build; the handle's own owner's
// is built once.
func (h *handle) proto(owner uint64, build func(owner uint64) *protocol) *protocol {
	if owner != h.owner {
		return build(owner)
	}
	if p := h.self.Load(); p != nil {
		return p
	}
	p := build(owner)
	h.self.Store(p)
	return p
}

// call makes an acquiring call of the owner in ctx, described by proto: in
// mode for the handle's own owner, a re-entering one for one from WithOwner.
func (h *handle) call(ctx context.Context, mode holdMode, proto func(owner uint64) *protocol) *call {
	owner, explicit := ownerOf(ctx, h.owner)
	if explicit {
		mode = reenter
	}
	return &call{p: proto(owner), mode: mode, n: 1}
}

// unlockIn releases one hold of the owner in ctx (the handle's own if it has
// none), described by proto.
func (h *handle) unlockIn(ctx context.Context, proto func(owner uint64) *protocol) error {
	owner, _ := ownerOf(ctx, h.owner)
	return h.c.releaseHold(ctx, proto(owner), 1)
}

// locked turns the error of a Lock (call: "Lock of"...) into a panic: only a
// closed Client or misuse ends one.
func (h *handle) locked(err error, call string) {
	switch {
	case errors.Is(err, ErrUpgrade):
		panic("redisync: " + call + " " + strconv.Quote(h.name) + " while the handle holds its read lock (upgrade)")
	case err != nil:
		panic("redisync: " + call + " " + strconv.Quote(h.name) + " on a closed Client")
	}
}

// tried logs the failure of a TryLock, which counts as not acquired.
func (h *handle) tried(ok bool, err error) bool {
	if err != nil && !errors.Is(err, ErrClosed) {
		h.cfg.logger.Warn("redisync: TryLock failed", "name", h.name, "error", err)
	}
	return ok
}

// unlocked turns the error of an Unlock into a panic when the handle held
// nothing, with misuse, a format given the lock's name, and logs a failure to reach Redis (not a loss, which
// Done and Err report).
func (h *handle) unlocked(err error, misuse string) {
	switch {
	case errors.Is(err, ErrNotHeld):
		panic(fmt.Sprintf(misuse, h.name))
	case err != nil && !errors.Is(err, ErrLockLost) && !errors.Is(err, ErrClosed):
		h.cfg.logger.Warn("redisync: unlock failed; the lock expires with its lease", "name", h.name, "error", err)
	}
}

// noCopy makes go vet's copylocks check report copies of the types embedding it.
type noCopy struct{}

// Lock is a no-op used by go vet's copylocks check.
func (*noCopy) Lock() {}

// Unlock is a no-op used by go vet's copylocks check.
func (*noCopy) Unlock() {}

// lastOwner numbers owners, of contexts and of handles, across the process.
var lastOwner atomic.Uint64

type ownerKey struct{}

// WithOwner returns a copy of ctx that carries a new owner identity.
//
// By default each handle is one owner and, like [sync.Mutex], does not
// re-enter: a second Lock waits. Calls given a context from WithOwner act for
// that context's owner instead, and re-enter: each LockContext by an owner
// that already holds the lock adds one hold, and the lock is released when
// the owner has called UnlockContext as many times, as Redisson's locks do for
// one thread. The owner may span handles of the same name on the same
// [Client], and goroutines, as long as its calls do not overlap in time.
func WithOwner(ctx context.Context) context.Context {
	return context.WithValue(ctx, ownerKey{}, lastOwner.Add(1))
}

// ownerOf returns the owner carried by ctx, or def when there is none.
func ownerOf(ctx context.Context, def uint64) (owner uint64, explicit bool) {
	if id, ok := ctx.Value(ownerKey{}).(uint64); ok {
		return id, true
	}
	return def, false
}
