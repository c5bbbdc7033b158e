package redisync

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/quorum"
	"github.com/go-redisync/redisync/internal/scripts"
)

// A Mutex is a mutual exclusion lock shared by every process that uses the
// same name on the same Redis. It is reentrant per owner (see [WithOwner]) and
// stored in Redisson's RLock layout, so a Java service using Redisson's
// getLock(name) excludes, and is excluded by, a Go service using NewMutex(name).
//
// Without an owner in the context, a Mutex behaves like [sync.Mutex]: it is
// one owner, Lock waits while it is held (through this handle or another, in
// any process), and any goroutine may Unlock it. It is held under a lease
// (see [WithWatchdogTimeout] and [WithLease]) and can be lost: [Mutex.Done]
// and [Mutex.Err] report a loss.
//
// A Mutex must not be copied after first use.
type Mutex struct {
	handle
	keys scripts.MutexKeys // its keys and channel (see layout.Mutex)
	// fenced marks a FencedMutex: every acquisition takes a token.
	fenced bool
}

// NewMutex returns a handle on the mutex called name, without touching Redis.
// The options override the Client's for this handle. NewMutex panics if name
// is empty, if its keys could not share one Redis Cluster slot (a "{" without
// a non-empty hash tag "{...}", or a "}" with no hash tag before it), or if an
// option is invalid (on a quorum Client also a lease longer than the
// Client's, or WithSyncReplicas: see [NewQuorum]).
func (c *Client) NewMutex(name string, opts ...Option) *Mutex {
	m := new(Mutex)
	c.initMutex(m, PrimitiveMutex, name, opts)
	return m
}

// initMutex sets up m, a new handle of sort prim on the mutex called name.
func (c *Client) initMutex(m *Mutex, prim Primitive, name string, opts []Option) {
	c.initHandle(&m.handle, prim, name, opts)
	m.keys = scripts.MutexKeysOf(layout.MutexOf(name))
}

// Lock locks m. If the lock is already in use, the calling goroutine blocks
// until the mutex is available. Redis failures are retried with backoff, and
// persistent ones logged; each attempt is bounded by the call timeout
// ([WithCallTimeout]). Lock panics if the Client is closed, which ends a
// Lock that waits.
//
// The waiting calls of one Client get the lock in the order they came,
// whatever handle they use: a goroutine that waits is not overtaken for good
// by newer Lock or TryLock calls of its process, as sync.Mutex's waiters
// are not. Across processes the order is not promised; see [FairMutex].
func (m *Mutex) Lock() {
	_, err := m.lock(context.Background(), waitHandover, retryForever)
	m.locked(err, "Lock of")
}

// TryLock tries to lock m and reports whether it succeeded, with one attempt
// that waits neither for the lock nor for another call of the same owner (it
// then fails), bounded by the call timeout ([WithCallTimeout]); a Redis
// failure, or Redis not answering in time, counts as not acquired. It fails while
// waiting Lock calls of the Client queue for the lock (see [Mutex.Lock]), as
// sync.Mutex's TryLock does while its waiters starve.
func (m *Mutex) TryLock() bool {
	return m.tried(m.TryLockContext(context.Background()))
}

// LockContext locks m, waiting until the lock is available or ctx is done.
// With an owner from [WithOwner] in ctx it acquires for that owner, re-entering
// a lock the owner already holds.
//
// When ctx ends first, LockContext returns ctx.Err() and leaves no lock and no
// subscription behind. A Redis failure is returned, wrapped; what an attempt
// of unknown outcome may have taken is given back. LockContext returns by
// ctx's deadline whatever Redis does: what Redis does not answer at once is
// given back in the background.
func (m *Mutex) LockContext(ctx context.Context) error {
	_, err := m.lock(ctx, waitHandover, returnErrors)
	return err
}

// lock is a waiting call of the owner in ctx: one attempt when the lock is
// not contended in this process (as sync.Mutex's Lock is a compare-and-swap
// when it is free), the wait loop when that attempt found it taken; p says
// how failures end it.
func (m *Mutex) lock(ctx context.Context, mode holdMode, p persistence) (*call, error) {
	a := m.call(ctx, mode, m.proto)
	if m.c.tryFirst(ctx, a) {
		return a, nil
	}
	return a, m.c.acquire(ctx, a, nil, p)
}

// TryLockContext makes one attempt to lock m, for the owner in ctx if any, and
// reports whether it succeeded. Like [Mutex.TryLock], it does not wait.
func (m *Mutex) TryLockContext(ctx context.Context) (bool, error) {
	return m.c.tryOnce(ctx, m.call(ctx, waitFree, m.proto))
}

// Unlock unlocks m. Like [sync.Mutex], a locked Mutex is not associated with a
// goroutine: one goroutine may lock it and another unlock it.
//
// When goroutines of this Client wait for the lock, Unlock may pass it to
// the one that has waited longest, briefly, before it lets other processes
// have it; the hold that Done and Err described then ends with Err nil, as
// after any release.
//
// It is a run-time error, and Unlock panics, if m is not locked by its own
// owner in this process. If the hold was lost, or Redis cannot be reached,
// Unlock does not panic: the loss was reported through Done and Err, and a
// failure is logged. Unlock waits for Redis no longer than the call timeout
// ([WithCallTimeout]); a release Redis has not confirmed by then is finished
// in the background, and a lock that could not be released expires with its
// lease.
func (m *Mutex) Unlock() {
	m.unlocked(m.unlockIn(context.Background(), m.proto), "redisync: unlock of unlocked mutex %q")
}

// UnlockContext releases one hold of m by the owner in ctx (m's own owner if
// ctx has none); the lock is released with the owner's last hold. It returns
// an error wrapping ErrNotHeld if the owner holds no lock through this Client,
// and one wrapping ErrLockLost if the hold had been lost. The hold ends even
// when Redis cannot be reached (the lock then expires with its lease).
//
// When ctx ends while another call of the owner keeps UnlockContext waiting,
// it returns ctx.Err() and the hold is unchanged. When ctx ends before Redis
// has answered, it returns ctx.Err(); when Redis cannot be reached or does
// not answer, the error says so. Either way the release is finished in the
// background, sent again until Redis takes it or the lease has run out (or
// the Client closes), and reported by Done and Err.
func (m *Mutex) UnlockContext(ctx context.Context) error { return m.unlockIn(ctx, m.proto) }

// ForceUnlock deletes the lock whoever holds it, wakes its waiters, and reports
// whether it was locked. The hold it deleted, if it was taken through this
// Client, ends as lost; a hold taken after it (by a waiter its wake-up
// reached) does not.
func (m *Mutex) ForceUnlock(ctx context.Context) (bool, error) {
	if m.c.quorum != nil {
		if m.c.isClosed() { // the servers are asked through the quorum's clients, not the gate
			return false, lockError(m.primitive, m.name, ErrClosed)
		}
		fields, err := m.c.quorum.ForceUnlock(ctx, m.key, m.keys.Channel(), "0")
		ok, err := m.forceUnlocked(ctx, fields, err)
		if ok {
			m.c.wakeEvery(m.keys.Channel())
		}
		return ok, err
	}
	return m.forceUnlockHash(ctx, m.keys.Channel(), "0")
}

// HoldCount returns how many holds the owner in ctx (m's own owner if ctx has
// none) has on the lock, as Redis records it: 0 when it does not hold it
// through this Client.
func (m *Mutex) HoldCount(ctx context.Context) (int, error) { return m.holdCount(ctx, exclusive) }

// proto describes owner's hold on m.
func (m *Mutex) proto(owner uint64) *protocol {
	if p := m.self.Load(); p != nil && owner == m.owner {
		return p // the common case, without a method value to allocate
	}
	return m.handle.proto(owner, m.newProto)
}

func (m *Mutex) newProto(owner uint64) *protocol {
	p := m.protocol(exclusive, m.name, owner, PrimitiveMutex, m.keys.Channel(), mutexPolicy)
	p.latch = m.keys[2]
	if m.fenced {
		p.primitive, p.policy = PrimitiveFencedMutex, fencedPolicy
	}
	if m.c.quorum != nil {
		m.quorumProto(p)
		return p
	}
	switch {
	case m.fenced: // every acquisition asks Redis: no handover
	case p.cfg.lease != 0 || p.cfg.syncReplicas != 0 || p.cfg.heartbeat > p.cfg.watchdog:
		// A hold handed through Redis lasts until the waiter's heartbeat
		// deadline, then its lease: not for a fixed lease, nor when
		// replicas must see the acquisition first.
		p.handover = handoverInClient
	default:
		p.ticket = m.mutexTicket
	}
	p.acquire, p.release = m.runAcquire, m.runRelease
	p.newLease = func(t *term) *lease.Lease { return m.newLease(t, m.keys[:1], scripts.MutexRenew) }
	return p
}

// runAcquire runs the acquire script for a: its reply's value is, for
// acquired, the fencing token (0 on a plain Mutex); for busy, the holder's
// PTTL.
func (m *Mutex) runAcquire(ctx context.Context, a acquisition) (scripts.Reply, error) {
	h := a.hold(m.leaseMS)
	switch {
	case m.fenced:
		return m.c.scripts.AcquireFenced(ctx, &m.keys, h)
	case a.tk != nil:
		return m.c.scripts.WaitMutex(ctx, &m.keys, h)
	}
	return m.c.scripts.AcquireMutex(ctx, &m.keys, h)
}

// runRelease runs the release script once.
func (m *Mutex) runRelease(ctx context.Context, r release) (scripts.Released, error) {
	return m.c.scripts.ReleaseMutex(ctx, &m.keys, &r.Release)
}

// mutexTicket returns the place in the queue of m's lock of the waiting
// call a, whose field is its id there.
func (m *Mutex) mutexTicket(a *call) *ticket {
	return m.c.leases.NewHeartbeat(a.field, m.keys[4], m.keys[3], a.p.cfg.heartbeat)
}

// quorumProto makes p, the protocol of a Mutex handle on a quorum Client,
// take, release and renew its holds on every server: no queue in Redis (a
// release hands a hold on only within the Client), no replicas to wait for.
func (m *Mutex) quorumProto(p *protocol) {
	k := scripts.QuorumKeysOf(layout.MutexOf(m.name))
	q := m.c.quorum
	if !m.fenced {
		p.handover = handoverInClient
	}
	p.acquire = func(ctx context.Context, a acquisition) (scripts.Reply, error) { return m.quorumAcquire(ctx, q, &k, a) }
	p.release = func(ctx context.Context, r release) (scripts.Released, error) {
		n, err := q.Release(ctx, &k, r.Release)
		switch {
		case err != nil:
			return scripts.Released{}, err
		case n < q.Majority():
			return scripts.Released{Status: -1}, nil // not on a majority: lost
		case r.To > 0:
			return scripts.Released{}, nil
		}
		return scripts.Released{Status: 1}, nil
	}
	p.newLease = func(t *term) *lease.Lease {
		l := &t.own
		*l = lease.Lease{Key: m.key, TTL: m.lease, Lost: t}
		if m.cfg.lease == 0 {
			l.Renewer = &quorum.Hold{Q: q, Keys: &k, Field: t.field, Lease: m.lease}
		}
		return l
	}
}

// quorumAcquire asks every server of q for acquisition a. Held, the reply
// carries the hold's validity and, for a FencedMutex's first acquire, the
// token written to a majority; not held, how long the lock stays taken,
// after a random pause when the votes were split (each contender held
// some), so that contenders do not keep splitting them.
func (m *Mutex) quorumAcquire(ctx context.Context, q *quorum.Quorum, k *scripts.QuorumKeys, a acquisition) (scripts.Reply, error) {
	res, err := q.Acquire(ctx, k, a.hold(m.leaseMS), m.lease)
	switch {
	case err != nil:
		return scripts.Reply{Spent: res.Spent}, err
	case res.Gone:
		return scripts.Reply{Outcome: scripts.Gone}, nil
	case !res.Held:
		if res.Granted() > 0 {
			select {
			case <-time.After(time.Millisecond + rand.N(max(m.lease/50, 20*time.Millisecond))):
			case <-ctx.Done():
			}
		}
		return scripts.Reply{Outcome: scripts.Busy, Value: max(res.Wait.Milliseconds(), -1), Spent: res.Spent}, nil
	}
	r := scripts.Reply{Outcome: scripts.Acquired, Within: res.Validity}
	if m.fenced && a.count == 0 {
		token, err := q.Token(ctx, k, res.Counter, m.lease)
		if err != nil {
			// Given back with its field latched: the call asks again with
			// a new one.
			m.c.cleanUp(m.name, func() { _, _ = q.Release(context.WithoutCancel(ctx), k, q.Retire(a.field)) })
			return scripts.Reply{Spent: true}, err
		}
		r.Value = token
	}
	return r, nil
}
