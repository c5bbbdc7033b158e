package redisync

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/scripts"
)

// A MultiMutex locks several names as one, as Redisson's RedissonMultiLock
// does: when LockContext returns, it holds every name, or none.
//
// Each name is held in Redisson's RLock layout, as a [Mutex] holds it, so a
// Mutex (or a Java RLock) on any one of the names and the MultiMutex exclude
// each other. MultiMutexes whose names overlap, given in any order, never
// deadlock: the names are taken in one canonical order, all of them in one
// script where they share a Redis Cluster slot (on standalone Redis and
// behind Sentinel, always). Waiters wait on Pub/Sub for the name that keeps
// them waiting.
//
// A MultiMutex is one owner, as a [sync.Mutex] is: it does not re-enter, and
// [WithOwner] does not apply. It is held under a lease, like a Mutex; Done
// closes and Err reports a loss when any one of its names is lost. A
// MultiMutex must not be copied after first use.
type MultiMutex struct {
	h      handle
	names  []string
	groups []*multiGroup        // in the order they are taken
	cur    atomic.Pointer[term] // the latest hold as a whole, for Done and Err
}

// A multiGroup is the names of a MultiMutex that share a cluster slot: one
// hold in the engine, taken by one script call.
type multiGroup struct {
	keys scripts.MultiKeys
	p    *protocol
}

// NewMultiMutex returns a handle on the names as one lock, without touching
// Redis. It panics if names is empty or has a duplicate, if a name is
// invalid (see [Client.NewMutex]), or if an option is invalid.
func (c *Client) NewMultiMutex(names []string, opts ...Option) *MultiMutex {
	c.single("NewMultiMutex")
	if len(names) == 0 {
		panic("redisync: NewMultiMutex without names")
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	for i, name := range sorted {
		if i > 0 && name == sorted[i-1] {
			panic("redisync: NewMultiMutex: duplicate name " + strconv.Quote(name))
		}
		if err := layout.Check(name); err != nil {
			panic("redisync: invalid lock name " + strconv.Quote(name) + ": " + err.Error())
		}
	}
	m := &MultiMutex{names: slices.Clone(names)}
	c.initHandle(&m.h, PrimitiveMultiMutex, sorted[0], opts)
	m.h.name = strings.Join(names, ",")
	cluster := c.rc.Mode() == rueidis.ClientModeCluster
	slot := func(name string) uint16 {
		if cluster {
			return layout.Slot(name)
		}
		return 0
	}
	// The canonical order: by slot, then by name. A holder waits only for a
	// slot after every one it holds, so holders never wait in a circle.
	slices.SortFunc(sorted, func(a, b string) int { return cmp.Or(cmp.Compare(slot(a), slot(b)), strings.Compare(a, b)) })
	for start := 0; start < len(sorted); {
		end := start + 1
		for end < len(sorted) && slot(sorted[end]) == slot(sorted[start]) {
			end++
		}
		m.groups = append(m.groups, m.newGroup(sorted[start:end]))
		start = end
	}
	return m
}

// newGroup describes the hold of names, which share a slot.
func (m *MultiMutex) newGroup(names []string) *multiGroup {
	ls := make([]layout.Mutex, len(names))
	for i, name := range names {
		ls[i] = layout.MutexOf(name)
	}
	g := &multiGroup{keys: scripts.MultiKeysOf(ls)}
	p := m.h.protocol(multiple, strings.Join(names, "\x00"), m.h.owner, PrimitiveMultiMutex, g.keys.Channels[0], multiPolicy)
	p.name = m.h.name
	p.acquire = func(ctx context.Context, a acquisition) (scripts.Reply, error) {
		return m.h.c.scripts.AcquireMulti(ctx, &g.keys, a.hold(m.h.leaseMS))
	}
	p.release = func(ctx context.Context, r release) (scripts.Released, error) {
		return m.h.c.scripts.ReleaseMulti(ctx, &g.keys, &r.Release)
	}
	n := strconv.Itoa(len(names))
	p.newLease = func(t *term) *lease.Lease { return m.h.newLease(t, g.keys.Locks, scripts.MultiRenew, n) }
	g.p = p
	return g
}

// Names returns the names, in the order given to NewMultiMutex.
func (m *MultiMutex) Names() []string { return slices.Clone(m.names) }

// Lock locks every name of m, waiting while any is held elsewhere. Redis
// failures are retried with backoff, and persistent ones logged. Lock panics
// if the Client is closed.
func (m *MultiMutex) Lock() {
	m.h.locked(m.lock(context.Background(), retryForever), "Lock of")
}

// TryLock tries to lock every name of m, once, and reports whether it
// succeeded; a Redis failure counts as not acquired.
func (m *MultiMutex) TryLock() bool {
	return m.h.tried(m.TryLockContext(context.Background()))
}

// LockContext locks every name of m, waiting until all are available or ctx
// is done. When it returns an error (ctx.Err() when ctx ended first), it
// holds none of the names and leaves no subscription behind.
func (m *MultiMutex) LockContext(ctx context.Context) error { return m.lock(ctx, returnErrors) }

// TryLockContext makes one attempt to lock every name of m and reports
// whether it succeeded; when it did not, it holds none of them.
func (m *MultiMutex) TryLockContext(ctx context.Context) (bool, error) {
	err := m.take(ctx, func(a *call) error {
		ok, err := m.h.c.tryOnce(ctx, a)
		if err == nil && !ok {
			err = errTaken
		}
		return err
	})
	if errors.Is(err, errTaken) {
		return false, nil
	}
	return err == nil, err
}

// errTaken: a single attempt found one of the names taken.
var errTaken = errors.New("taken")

// lock takes m's groups, waiting for each.
func (m *MultiMutex) lock(ctx context.Context, p persistence) error {
	return m.take(ctx, func(a *call) error { return m.h.c.acquire(ctx, a, nil, p) })
}

// take takes m's groups in order with acquire, and gives back those it took
// when one fails.
func (m *MultiMutex) take(ctx context.Context, acquire func(a *call) error) error {
	terms := make([]*term, 0, len(m.groups))
	for i, g := range m.groups {
		a := &call{p: g.p, mode: waitFree, n: 1}
		if err := acquire(a); err != nil {
			m.h.c.cleanUp(m.h.name, func() { m.undo(ctx, i) }) // the call returns by its deadline whatever Redis does
			return err
		}
		terms = append(terms, a.term)
	}
	m.began(terms)
	return nil
}

// undo releases the first n groups of m, taken by a call that failed. A
// group whose hold already ended (lost, or ended by Close) is released in
// Redis all the same: the call that took it returns an error, so nobody is
// inside, and what it holds there is freed rather than left to its lease.
func (m *MultiMutex) undo(ctx context.Context, n int) {
	for _, g := range m.groups[:n] {
		_, field := m.h.c.holds.current(g.p.key)
		err := m.h.c.releaseHold(context.WithoutCancel(ctx), g.p, 1)
		switch {
		case (errors.Is(err, ErrLockLost) || errors.Is(err, ErrClosed)) && field != "":
			m.free(ctx, g, field)
		case err != nil && !errors.Is(err, ErrLockLost) && !errors.Is(err, ErrClosed):
			m.h.cfg.logger.Warn("redisync: could not release the names a failed MultiMutex lock took; they expire with their lease",
				"name", m.h.name, "error", err)
		}
	}
}

// free releases in Redis what the hold field of group g still has there,
// after the engine ended the hold without releasing it (a loss of one of
// its names, or Close).
func (m *MultiMutex) free(ctx context.Context, g *multiGroup, field string) {
	rel := release{Release: scripts.Release{Field: field, From: 1, Latch: latchTTL}}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupBudget)
	defer cancel()
	if _, err := g.p.release(ctx, rel); err != nil {
		m.h.cfg.logger.Warn("redisync: could not release the names of an ended MultiMutex hold; they expire with their lease",
			"name", m.h.name, "error", err)
	}
}

// began records the terms of one hold of every group as the hold that Done
// and Err report: it ends when the first of them does.
func (m *MultiMutex) began(terms []*term) {
	whole := new(term)
	m.cur.Store(whole)
	for _, t := range terms {
		t.whenEnded(func() {
			_, err := t.result()
			whole.end(err)
		})
	}
}

// Unlock unlocks every name of m. It is a run-time error, and Unlock panics,
// if m is not locked. A loss, or a failure to reach Redis, does not panic: the
// loss was reported through Done and Err, a failure is logged, and a name
// that could not be released expires with its lease.
func (m *MultiMutex) Unlock() {
	m.h.unlocked(m.UnlockContext(context.Background()), "redisync: unlock of unlocked MultiMutex %q")
}

// UnlockContext unlocks every name of m. It returns an error wrapping
// ErrNotHeld if m is not locked through this Client, and one wrapping
// ErrLockLost if any name had been lost; the others are released all the
// same. Cancellation is as for [Mutex.UnlockContext].
func (m *MultiMutex) UnlockContext(ctx context.Context) error {
	var first error
	for _, g := range m.groups {
		_, field := m.h.c.holds.current(g.p.key)
		err := m.h.c.releaseHold(ctx, g.p, 1)
		if errors.Is(err, ErrLockLost) && field != "" {
			// The lost hold may still have other names of the slot: they are
			// freed in the background, and the call keeps its deadline.
			m.h.c.cleanUp(m.h.name, func() { m.free(ctx, g, field) })
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// Context returns a copy of parent that is cancelled when the latest hold
// of m ends, by Unlock or the loss of any one of its names, like
// [Mutex.Context].
func (m *MultiMutex) Context(parent context.Context) context.Context {
	return m.cur.Load().context(parent)
}

// Done returns a channel that is closed when the latest hold of m ends: by
// Unlock, or when any one of its names is lost. It returns a closed channel
// if m was never locked.
func (m *MultiMutex) Done() <-chan struct{} { return m.cur.Load().doneChan() }

// Err returns nil while the latest hold of m lasts or after its clean
// release; after the loss of any of its names, an error wrapping
// [ErrLockLost] and its cause, as [Mutex.Err] does.
func (m *MultiMutex) Err() error { return m.cur.Load().errOrNil() }
