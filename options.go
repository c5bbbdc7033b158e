package redisync

import (
	"fmt"
	"log/slog"
	"time"
)

// DefaultWatchdogTimeout is the lease of a lock held in watchdog mode, the
// default: the lock is renewed every DefaultWatchdogTimeout/3 while its holder
// is alive and expires at most this long after the holder dies. Change it
// with [WithWatchdogTimeout].
const DefaultWatchdogTimeout = 30 * time.Second

// An Option configures a [Client] (as the default for all its handles) or one
// handle (overriding the Client's default). Invalid values make [New] return
// an error and make a handle constructor panic.
type Option func(*config)

type config struct {
	watchdog  time.Duration // lease in watchdog mode
	lease     time.Duration // fixed lease; 0 selects watchdog mode
	heartbeat time.Duration // a queued waiter's liveness timeout (FairMutex, Semaphore)
	logger    *slog.Logger
	observer  Observer // nil: no events (see WithObserver)
	err       error
}

func defaultConfig() config {
	return config{watchdog: DefaultWatchdogTimeout, heartbeat: DefaultHeartbeatTimeout, logger: slog.Default()}
}

func (cfg config) with(opts []Option) config {
	for _, opt := range opts {
		opt(&cfg)
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

// WithWatchdogTimeout selects watchdog mode with lease d: a held lock is
// renewed every d/3 and expires d after its holder stops renewing it. The
// default is [DefaultWatchdogTimeout]. d is rounded up to a whole millisecond
// and must be at least 3 ms.
func WithWatchdogTimeout(d time.Duration) Option {
	return func(cfg *config) {
		if d < 3*time.Millisecond {
			cfg.err = fmt.Errorf("redisync: watchdog timeout %v is below 3ms", d)
			return
		}
		cfg.watchdog, cfg.lease = d.Round(time.Millisecond), 0
		if cfg.watchdog < d {
			cfg.watchdog += time.Millisecond
		}
	}
}

// WithLease selects a fixed lease d: a lock is not renewed and expires d after
// it was acquired unless it is released first, as with Redisson's
// lock(leaseTime). d is rounded up to a whole millisecond and must be positive.
func WithLease(d time.Duration) Option {
	return func(cfg *config) {
		if d <= 0 {
			cfg.err = fmt.Errorf("redisync: lease %v is not positive", d)
			return
		}
		cfg.lease = d.Round(time.Millisecond)
		if cfg.lease < d {
			cfg.lease += time.Millisecond
		}
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
