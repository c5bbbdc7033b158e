package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/go-redisync/redisync"
)

// DefaultPoll is the retry delay given to the peers that wait by polling
// (redsync and redislock). Their own defaults are far slower (redsync sleeps
// 50–250 ms between tries; redislock does not retry at all), which would
// flatter redisync; 1 ms is what a user tuning them for latency would pick,
// and shorter delays mostly add load on the one server everyone shares.
const DefaultPoll = time.Millisecond

// RedislockTTL is the lease redislock locks are obtained with. redislock has
// no watchdog, so a user picks a TTL longer than any critical section; this
// matches redisync's default watchdog lease.
const RedislockTTL = redisync.DefaultWatchdogTimeout

// A Peer is one lock library under comparison.
type Peer struct {
	// Name names the library in tables and benchmark names.
	Name string
	// Connect returns a Client with connections of its own to the Redis
	// server at addr, as a separate process would have.
	Connect func(addr string) (Client, error)
}

// A Client is one process's instance of a lock library: its connection
// pool or client, and whatever the library shares between locks.
type Client interface {
	// NewMutex returns a handle on the lock called name. A handle may be
	// shared by goroutines: Lock may be called concurrently.
	NewMutex(name string) Mutex
	// Close releases the Client's resources, including its connections.
	Close()
}

// A Mutex is a handle on one named lock.
type Mutex interface {
	// Lock blocks until the lock is held or ctx is done, and returns the
	// hold, which is released with Held.Unlock.
	Lock(ctx context.Context) (Held, error)
}

// A Held is one hold of a lock.
type Held interface {
	// Unlock releases the hold.
	Unlock(ctx context.Context) error
}

// Peers returns the four libraries compared, redisync first, each used as
// its documentation recommends.
func Peers(poll time.Duration) []Peer {
	return []Peer{Redisync(), Redsync(poll), Redislock(poll), Rueidislock()}
}

// quietLogger keeps redisync's warnings (lost locks, Redis failures) on
// stderr, where a disturbed run shows, and drops the rest.
var quietLogger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

// RueidisOption returns the rueidis options redisync's documentation asks
// for ([redisync.New]: client-side caching off, AlwaysPipelining off, a
// MaxFlushDelay of 20 µs). The PING reference uses the same options.
func RueidisOption(addr string) rueidis.ClientOption {
	return rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true,
		MaxFlushDelay: 20 * time.Microsecond}
}

// Redisync is redisync: one [redisync.Client] on one rueidis client per
// process, a [redisync.Mutex] handle per name, LockContext and
// UnlockContext. The options are passed to [redisync.New].
func Redisync(opts ...redisync.Option) Peer {
	return redisyncPeer("redisync", func(c *redisync.Client, name string) Mutex {
		return redisyncMutex{m: c.NewMutex(name)}
	}, opts)
}

// RedisyncPrimitives returns redisync's FIFO primitives in a Peer's shape,
// for the scenarios that compare a lock's latency and handovers: a
// [redisync.FairMutex] and a [redisync.Semaphore] of one permit.
func RedisyncPrimitives() []Peer {
	return []Peer{
		redisyncPeer("redisync FairMutex", func(c *redisync.Client, name string) Mutex {
			return redisyncFair{m: c.NewFairMutex(name)}
		}, nil),
		redisyncPeer("redisync Semaphore(1)", func(c *redisync.Client, name string) Mutex {
			return redisyncSem{s: c.NewSemaphore(name, 1)}
		}, nil),
	}
}

// redisyncPeer is a Peer of redisync whose handles newMutex makes.
func redisyncPeer(name string, newMutex func(c *redisync.Client, name string) Mutex, opts []redisync.Option) Peer {
	return Peer{Name: name, Connect: func(addr string) (Client, error) {
		rc, err := rueidis.NewClient(RueidisOption(addr))
		if err != nil {
			return nil, err
		}
		c, err := redisync.New(rc, append([]redisync.Option{redisync.WithLogger(quietLogger)}, opts...)...)
		if err != nil {
			rc.Close()
			return nil, err
		}
		return &redisyncClient{rc: rc, c: c, newMutex: newMutex}, nil
	}}
}

type redisyncClient struct {
	rc       rueidis.Client
	c        *redisync.Client
	newMutex func(c *redisync.Client, name string) Mutex
}

func (c *redisyncClient) NewMutex(name string) Mutex { return c.newMutex(c.c, name) }

func (c *redisyncClient) Close() {
	_ = c.c.Close()
	c.rc.Close()
}

// redisyncMutex is pointer-shaped, so returning it as a Held allocates
// nothing: the allocation count is redisync's own.
type redisyncMutex struct{ m *redisync.Mutex }

func (m redisyncMutex) Lock(ctx context.Context) (Held, error) { return m, m.m.LockContext(ctx) }

func (m redisyncMutex) Unlock(ctx context.Context) error { return m.m.UnlockContext(ctx) }

type redisyncFair struct{ m *redisync.FairMutex }

func (m redisyncFair) Lock(ctx context.Context) (Held, error) { return m, m.m.LockContext(ctx) }

func (m redisyncFair) Unlock(ctx context.Context) error { return m.m.UnlockContext(ctx) }

type redisyncSem struct{ s *redisync.Semaphore }

func (m redisyncSem) Lock(ctx context.Context) (Held, error) { return m, m.s.Acquire(ctx, 1) }

// Unlock releases the permit; Release reports a failure to reach Redis in
// the log only (the permit then comes back with its lease).
func (m redisyncSem) Unlock(context.Context) error {
	m.s.Release(1)
	return nil
}

// Redsync is redsync v4 on go-redis v9 (the go-redis default options), as its
// README shows: redsync.New(goredis.NewPool(client)), NewMutex,
// LockContext, UnlockContext. Blocking acquisition needs a retry policy:
// WithTries(math.MaxInt32) (the default gives up after 32 tries) and a retry
// delay drawn uniformly from [poll/2, 3*poll/2) (redsync's own default delay
// is also jittered). A redsync Mutex is not safe for concurrent use, so a
// handle makes one per acquisition (two small allocations).
func Redsync(poll time.Duration) Peer {
	delay := redsync.WithRetryDelayFunc(func(int) time.Duration {
		return poll/2 + rand.N(poll)
	})
	return Peer{Name: "redsync", Connect: func(addr string) (Client, error) {
		rdb := goredis.NewClient(&goredis.Options{Addr: addr})
		rs := redsync.New(redsyncgoredis.NewPool(rdb))
		return &redsyncClient{rdb: rdb, rs: rs, opts: []redsync.Option{redsync.WithTries(math.MaxInt32), delay}}, nil
	}}
}

type redsyncClient struct {
	rdb  *goredis.Client
	rs   *redsync.Redsync
	opts []redsync.Option
}

func (c *redsyncClient) NewMutex(name string) Mutex { return &redsyncMutex{c: c, name: name} }

func (c *redsyncClient) Close() { _ = c.rdb.Close() }

type redsyncMutex struct {
	c    *redsyncClient
	name string
}

func (m *redsyncMutex) Lock(ctx context.Context) (Held, error) {
	mu := m.c.rs.NewMutex(m.name, m.c.opts...)
	if err := mu.LockContext(ctx); err != nil {
		if ctx.Err() != nil { // redsync reports a done context as ErrFailed
			return nil, ctx.Err()
		}
		return nil, err
	}
	return redsyncHeld{mu: mu}, nil
}

type redsyncHeld struct{ mu *redsync.Mutex }

func (h redsyncHeld) Unlock(ctx context.Context) error {
	ok, err := h.mu.UnlockContext(ctx)
	if err == nil && !ok {
		err = errors.New("redsync: unlock found the lock gone")
	}
	return err
}

// Redislock is bsm/redislock on go-redis v9 (default options), as its README
// shows: redislock.New(client), Obtain with a TTL (RedislockTTL) and a
// RetryStrategy, Release. Blocking acquisition needs the retry strategy
// (the default is not to retry): LinearBackoff(poll), the simplest one;
// ExponentialBackoff has no jitter and only waits longer.
func Redislock(poll time.Duration) Peer {
	return Peer{Name: "redislock", Connect: func(addr string) (Client, error) {
		rdb := goredis.NewClient(&goredis.Options{Addr: addr})
		opt := &redislock.Options{RetryStrategy: redislock.LinearBackoff(poll)}
		return &redislockClient{rdb: rdb, c: redislock.New(rdb), opt: opt}, nil
	}}
}

type redislockClient struct {
	rdb *goredis.Client
	c   *redislock.Client
	opt *redislock.Options
}

func (c *redislockClient) NewMutex(name string) Mutex { return &redislockMutex{c: c, name: name} }

func (c *redislockClient) Close() { _ = c.rdb.Close() }

type redislockMutex struct {
	c    *redislockClient
	name string
}

// Lock obtains the lock. redislock bounds a wait by the TTL when ctx has no
// deadline; every scenario gives one.
func (m *redislockMutex) Lock(ctx context.Context) (Held, error) {
	l, err := m.c.c.Obtain(ctx, m.name, RedislockTTL, m.c.opt)
	if err != nil {
		return nil, err
	}
	return redislockHeld{l: l}, nil
}

type redislockHeld struct{ l *redislock.Lock }

func (h redislockHeld) Unlock(ctx context.Context) error { return h.l.Release(ctx) }

// Rueidislock is rueidis's rueidislock, as its README recommends for one
// Redis server: KeyMajority 1 and NoLoopTracking (Redis >= 7.0.5), with
// client-side caching on (waiters are woken by its invalidations) and the
// default 5 s key validity, extended every 2.5 s. A hold is the cancel
// function WithContext returns.
func Rueidislock() Peer {
	return Peer{Name: "rueidislock", Connect: func(addr string) (Client, error) {
		l, err := rueidislock.NewLocker(rueidislock.LockerOption{
			ClientOption:   rueidis.ClientOption{InitAddress: []string{addr}},
			KeyMajority:    1,
			NoLoopTracking: true,
		})
		if err != nil {
			return nil, err
		}
		return rueidislockClient{l: l}, nil
	}}
}

type rueidislockClient struct{ l rueidislock.Locker }

func (c rueidislockClient) NewMutex(name string) Mutex { return rueidislockMutex{l: c.l, name: name} }

func (c rueidislockClient) Close() { c.l.Close() }

type rueidislockMutex struct {
	l    rueidislock.Locker
	name string
}

func (m rueidislockMutex) Lock(ctx context.Context) (Held, error) {
	_, cancel, err := m.l.WithContext(ctx, m.name)
	if err != nil {
		return nil, err
	}
	return rueidislockHeld(cancel), nil
}

// rueidislockHeld is the cancel function of a hold; calling it releases the
// lock (and waits for rueidislock's goroutines of that hold to finish).
type rueidislockHeld context.CancelFunc

func (h rueidislockHeld) Unlock(context.Context) error {
	h()
	return nil
}

// connectAll connects n Clients of p, closing them all on failure.
func connectAll(p Peer, addr string, n int) ([]Client, error) {
	cs := make([]Client, 0, n)
	for range n {
		c, err := p.Connect(addr)
		if err != nil {
			closeAll(cs)
			return nil, fmt.Errorf("%s: connect: %w", p.Name, err)
		}
		cs = append(cs, c)
	}
	return cs, nil
}

func closeAll(cs []Client) {
	for _, c := range cs {
		c.Close()
	}
}
