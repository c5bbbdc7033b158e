package redisync

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"
)

// DefaultWatchdogTimeout is the lease of a lock held in watchdog mode, the
// default: the lock is renewed every DefaultWatchdogTimeout/3 while its holder
// is alive and expires at most this long after the holder dies. Change it
// with [WithWatchdogTimeout].
const DefaultWatchdogTimeout = 30 * time.Second

// An Option configures a [Client] (as the default for all its handles) or one
// handle (overriding the Client's default). Invalid values make [New] return
// an error and make a handle constructor panic. A nil Option is invalid: it
// is more likely a variable never set than a wish for no option.
type Option func(*config)

type config struct {
	watchdog      time.Duration // lease in watchdog mode
	lease         time.Duration // fixed lease; 0 selects watchdog mode
	heartbeat     time.Duration // a queued waiter's liveness timeout (FairMutex, Semaphore)
	logger        *slog.Logger
	observer      Observer                      // nil: no events (see WithObserver)
	onMessage     func(channel, message string) // nil but in the handover benchmark (see notify.OnMessage)
	classicPubSub bool                          // PUBLISH/SUBSCRIBE on a cluster (Client-wide)
	syncReplicas  int                           // replicas that must acknowledge an acquisition; 0: none, < 0: all (WithSyncReplicas)
	syncTimeout   time.Duration
	fairWait      time.Duration // Redisson's fairLockWaitTimeout (NewRedissonFairMutex)
	calls         *deadlines    // bounds the calls that take no context (WithCallTimeout)
	name          string        // the Client's name (WithName; Client-wide, set by New)
	err           error
	// leases records, while with applies one list of options, which of
	// WithLease (1) and WithWatchdogTimeout (2) it has: not both.
	leases uint8
}

func defaultConfig() config {
	return config{watchdog: DefaultWatchdogTimeout, heartbeat: DefaultHeartbeatTimeout, fairWait: DefaultFairLockWaitTimeout,
		logger: slog.Default(), calls: defaultCalls}
}

// with returns cfg changed by opts, in order; cfg.err reports an invalid one.
func (cfg config) with(opts []Option) config {
	cfg.leases = 0
	for i, opt := range opts {
		if opt == nil {
			cfg.err = fmt.Errorf("redisync: option %d of %d is nil", i+1, len(opts))
			continue
		}
		opt(&cfg)
	}
	if cfg.leases == 3 {
		cfg.err = errors.New("redisync: WithLease and WithWatchdogTimeout given together: a lock's lease is fixed or kept by the watchdog, not both")
	}
	return cfg
}

// leaseTTL returns the lease written to Redis on each acquire.
func (cfg *config) leaseTTL() time.Duration {
	if cfg.lease > 0 {
		return cfg.lease
	}
	return cfg.watchdog
}

// WithWatchdogTimeout selects watchdog mode with lease d (the default is
// [DefaultWatchdogTimeout]): a held lock is renewed every d/3 and expires d
// after its holder stops. d is rounded up to a whole millisecond and must be
// at least 3 ms.
func WithWatchdogTimeout(d time.Duration) Option {
	return func(cfg *config) {
		if d < 3*time.Millisecond {
			cfg.err = fmt.Errorf("redisync: watchdog timeout %v is below 3ms", d)
			return
		}
		cfg.watchdog, cfg.lease = ceilMS(d), 0
		cfg.leases |= 2
	}
}

// ceilMS rounds d up to a whole millisecond, the unit of Redis expiries;
// the longest durations, which rounding up would wrap around to negative
// ones, round down.
func ceilMS(d time.Duration) time.Duration {
	if d > math.MaxInt64-time.Millisecond {
		return d.Truncate(time.Millisecond)
	}
	return (d + time.Millisecond - 1).Truncate(time.Millisecond)
}

// WithLease selects a fixed lease d: a lock is not renewed and expires d after
// it was acquired unless it is released first, as with Redisson's
// lock(leaseTime). d is rounded up to a whole millisecond and must be positive.
// An RWMutex read hold is still checked every few seconds (to report a loss,
// and keep the lock against a Redisson reader's watchdog), never extended.
func WithLease(d time.Duration) Option {
	return func(cfg *config) {
		if d <= 0 {
			cfg.err = fmt.Errorf("redisync: lease %v is not positive", d)
			return
		}
		cfg.lease = ceilMS(d)
		cfg.leases |= 1
	}
}

// DefaultCallTimeout bounds each call that takes no context, whatever Redis
// does: TryLock, TryRLock and TryAcquire (their one attempt), each attempt
// of Lock and RLock (which then tries again), and the wait of Unlock for its
// release (which is then finished in the background). Such a call returns
// within it, and up to an eighth more (at most 250 ms). Change it with
// [WithCallTimeout].
const DefaultCallTimeout = time.Second

// defaultCalls bounds the calls without a context of the handles that keep
// DefaultCallTimeout.
var defaultCalls = newDeadlines(DefaultCallTimeout)

// WithCallTimeout sets the bound d of the calls that take no context (see
// [DefaultCallTimeout]). d must be at least a millisecond. The calls that
// take one are bounded by it alone.
func WithCallTimeout(d time.Duration) Option {
	return func(cfg *config) {
		if d < time.Millisecond {
			cfg.err = fmt.Errorf("redisync: call timeout %v is below 1ms", d)
			return
		}
		cfg.calls = newDeadlines(d)
	}
}

// WithLogger sets the logger for lost locks and persistent Redis failures.
// The default is [slog.Default]. Acquisitions and releases are never logged.
func WithLogger(l *slog.Logger) Option {
	return func(cfg *config) {
		if l == nil {
			cfg.err = fmt.Errorf("redisync: nil logger")
			return
		}
		cfg.logger = l
	}
}

// WithName names the Client for the people who run it: `redisync inspect`,
// `watch` and `top` show the name beside each hold and waiting call of the
// Client, its log lines carry it (the attribute "client"), and so do its
// [Event]s. The default is the host's name and the process id, as in
// "web-7/4182". A name has at most 100 bytes and is not blank. It applies to a
// Client (New): a handle constructor given another name panics.
func WithName(name string) Option {
	return func(cfg *config) {
		if strings.TrimSpace(name) == "" || len(name) > 100 {
			cfg.err = fmt.Errorf("redisync: WithName %q: blank or longer than 100 bytes", name)
			return
		}
		cfg.name = name
	}
}

// DefaultHeartbeatTimeout is how long a waiter queued for a [FairMutex], a
// [Semaphore] or a [Mutex] keeps its place without proving that it is alive.
// A live waiter proves it every DefaultHeartbeatTimeout/3 and is never
// evicted; a crashed one leaves the queue at most this long after its last
// heartbeat (a Mutex handed to it just before is held that long at most).
// Change it with [WithHeartbeatTimeout].
const DefaultHeartbeatTimeout = 5 * time.Second

// WithHeartbeatTimeout sets the heartbeat timeout d of queued waiters (see
// [DefaultHeartbeatTimeout]): shorter, a queue moves past a crashed waiter
// sooner, at the cost of more renewals. d is rounded up to a whole
// millisecond and must be at least 3 ms. A Mutex's waiters queue only when d
// is at most their watchdog timeout.
func WithHeartbeatTimeout(d time.Duration) Option {
	return func(cfg *config) {
		if d < 3*time.Millisecond {
			cfg.err = fmt.Errorf("redisync: heartbeat timeout %v is below 3ms", d)
			return
		}
		cfg.heartbeat = ceilMS(d)
	}
}

// WithObserver sets the observer of the locks' events. Given to [New], it
// receives the events of every handle without an observer of its own, and
// those of the shared machinery ([EventRenewalBatch], [EventSubscribed]).
// Given to a handle constructor, it receives that handle's events; nil then
// silences the handle. Without an observer, no event is built.
func WithObserver(o Observer) Option {
	return func(cfg *config) { cfg.observer = o }
}

// WithShardedPubSub chooses sharded Pub/Sub on Redis Cluster (the default) or
// classic PUBLISH/SUBSCRIBE (on false), which Java services whose Redisson has
// no sharded subscriptions (before 3.22, or shardedSubscriptionMode off) need
// to wake, and be woken by, the same locks. It applies to a whole Client: a
// handle constructor given another value than the Client's panics.
func WithShardedPubSub(on bool) Option {
	return func(cfg *config) { cfg.classicPubSub = !on }
}

// WithSyncReplicas makes an acquisition count only once n replicas of the
// lock's primary have acknowledged it (WAIT, on the acquire's connection), so
// that a failover right after it keeps the lock; n < 0 waits for every
// replica connected to the primary, as Redisson's checkLockSyncedSlaves does.
// When fewer acknowledge within timeout, the acquisition is undone: LockContext
// returns an error wrapping [ErrNotReplicated], Lock retries. A server that
// refuses WAIT (or, for n < 0, ROLE) to the user, as some managed services do,
// fails every acquisition with its refusal. Off by default (n = 0):
// docs/guarantees.md gives its cost. A re-entry, which extends a hold already
// acknowledged, does not wait.
func WithSyncReplicas(n int, timeout time.Duration) Option {
	return func(cfg *config) {
		if n != 0 && timeout <= 0 {
			cfg.err = fmt.Errorf("redisync: WithSyncReplicas timeout %v is not positive", timeout)
			return
		}
		cfg.syncReplicas, cfg.syncTimeout = n, timeout
	}
}

// DefaultFairLockWaitTimeout is Redisson's default fairLockWaitTimeout, which
// a FairMutex made by [Client.NewRedissonFairMutex] assumes the Java side
// uses. Change it with [WithFairLockWaitTimeout].
const DefaultFairLockWaitTimeout = 5 * time.Minute

// WithFairLockWaitTimeout tells a FairMutex made by
// [Client.NewRedissonFairMutex] the fairLockWaitTimeout d of the Java side's
// Redisson configuration (see [DefaultFairLockWaitTimeout]): each Java
// acquisition moves every waiter's eviction time d sooner, so the Go
// waiters keep a wait per waiter ahead of them in hand. d is rounded up to a
// whole millisecond and must be positive. Other handles ignore it.
func WithFairLockWaitTimeout(d time.Duration) Option {
	return func(cfg *config) {
		if d <= 0 {
			cfg.err = fmt.Errorf("redisync: fair lock wait timeout %v is not positive", d)
			return
		}
		cfg.fairWait = ceilMS(d)
	}
}
