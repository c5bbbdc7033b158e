package redisync

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/bounded"
	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/lease"
	"github.com/go-redisync/redisync/internal/notify"
	"github.com/go-redisync/redisync/internal/quorum"
	"github.com/go-redisync/redisync/internal/scripts"
)

// A Client makes the primitives of one process and runs what they share: the
// script registry, the renewal scheduler (one goroutine renewing every held
// lock, in batches) and the subscriber (one Pub/Sub subscription per waited-on
// name, shared by all waiters). Handles are cheap; create one Client per
// process and as many handles as needed.
type Client struct {
	engine
	identity  *identity // the Client's record, by which the tools name it
	closeOnce sync.Once
}

// New returns a Client that works through rc, with the options as the
// defaults of every handle. On Redis Cluster the primitives use sharded
// Pub/Sub (Redis 7.0 or later) unless [WithShardedPubSub] says otherwise. rc
// should have client-side caching disabled (DisableCache) unless it is used
// elsewhere; a MaxFlushDelay of about 20 µs lowers the CPU of many
// concurrent calls. AlwaysPipelining is best left off: rueidis pipelines
// concurrent calls anyway, and with it a lone caller's round trip is longer.
// Close the Client before rc.
func New(rc rueidis.Client, opts ...Option) (*Client, error) {
	if rc == nil {
		return nil, errors.New("redisync: nil rueidis client")
	}
	cfg := defaultConfig().with(opts)
	if cfg.err != nil {
		return nil, cfg.err
	}
	rc = bounded.Wrap(rc) // every call returns by its context's end (see internal/bounded)
	d := oneServer
	if rc.Mode() == rueidis.ClientModeCluster {
		d = clusterSharded
		if cfg.classicPubSub {
			d = clusterClassic
		}
	}
	return newClient(cfg, []rueidis.Client{rc}, scripts.NewRunner(rc, d == clusterSharded), d, nil), nil
}

// A deployment is what a Client's rueidis client reaches: one server (a
// standalone one, a Sentinel's primary, or each server of a quorum), or a
// Redis Cluster whose locks publish classically or sharded.
type deployment uint8

const (
	oneServer deployment = iota
	clusterClassic
	clusterSharded
)

// newClient starts a Client with cfg over rcs (one deployment, or a
// quorum's, q), whose scripts run through runner (a quorum's first
// deployment's: its handles ask every one through q).
func newClient(cfg config, rcs []rueidis.Client, runner *scripts.Runner, d deployment, q *quorum.Quorum) *Client {
	cluster, sharded := d != oneServer, d == clusterSharded
	if cfg.name == "" {
		cfg.name = defaultName()
	}
	cfg.logger = cfg.logger.With("client", cfg.name)
	life, end := context.WithCancel(context.Background())
	rc := gate{Client: rcs[0], closed: life.Done()}
	c := &Client{engine: engine{
		rc:        rc,
		direct:    scripts.NewRunner(rc, sharded),
		id:        newUUID(),
		cfg:       cfg,
		scripts:   runner,
		life:      life,
		end:       end,
		holds:     newHoldTable(),
		handovers: newHandovers(),
		quorum:    q,
		sharded:   sharded,
		rcs:       rcs,
	}}
	var leaseOpts []lease.Option
	notifyOpts := []notify.Option{notify.OnSubscribe(c.subscribed)}
	if cfg.observer != nil {
		leaseOpts = append(leaseOpts, lease.OnBatch(c.observeBatch))
	}
	if cfg.onMessage != nil {
		notifyOpts = append(notifyOpts, notify.OnMessage(cfg.onMessage))
	}
	c.leases = lease.New(c.scripts, cluster, cfg.logger, leaseOpts...)
	c.notify = notify.NewOver(rcs, sharded, cfg.logger, notifyOpts...)
	c.listen()
	c.identity = startIdentity(rcs, c.id, cfg.name, cfg.logger)
	return c
}

// ID returns the Client's identity in Redis: the first part of every hold
// field it writes ("<id>:<n>"), which `redisync inspect` shows. It is random,
// fresh for each Client.
func (c *Client) ID() string { return c.id }

// Name returns the Client's name: the one given to [WithName], or its host's
// name and process id ("web-7/4182").
func (c *Client) Name() string { return c.cfg.name }

// Close stops the Client's renewal and subscriptions and waits until its
// goroutines have exited, and releases still in progress (a few seconds at
// most). It does not close the rueidis client. Close is idempotent.
//
// Locks still held are not released, as a holder may still be inside its
// critical section: their holds end at once (Done is closed and Err wraps
// ErrClosed) and they expire within their lease. Waiting calls return
// ErrClosed, and so does every later call of a handle of the Client, which
// leaves Redis as it is: a Try reports false, a Lock panics, an Unlock of a
// hold that Close ended does nothing, and a CountingSemaphore's Release
// logs that its permits were not given back.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.end()
		c.notify.Close()
		c.leases.Close()
		if c.quorum != nil {
			c.quorum.Close() // its catch-ups of restarted servers
		}
		c.endHolds(func(holdKey, *term) bool { return true }, func(t *term) { t.end(lockError(t.primitive, t.name, ErrClosed)) }, nil)
		c.background.Wait()
		c.identity.stop()
	})
	return nil
}

// newUUID returns a random (version 4) UUID in its text form.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// observeBatch is the renewal scheduler's batch callback.
func (c *Client) observeBatch(b lease.Batch) {
	c.cfg.observer.Observe(context.Background(), Event{Kind: EventRenewalBatch, Client: c.cfg.name, Batch: b.Size, Failures: b.Failures,
		Duration: b.Duration, Cause: b.Err})
}

// subscribed is the subscriber's confirmation callback. The Client's own
// channel (a force unlock's notice, see listen) is no lock's: its
// confirmations go to heard, and an observer hears of the locks'
// subscriptions only. A quorum's force unlock publishes on every server,
// so one server's resubscription missed nothing the others heard: on a
// quorum Client, only each server's first confirmation goes to heard.
func (c *Client) subscribed(channel string, again bool) {
	if channel == layout.ClientChannel(c.id) {
		if !again || c.quorum == nil {
			c.heard()
		}
		return
	}
	if c.cfg.observer == nil {
		return
	}
	c.cfg.observer.Observe(context.Background(), Event{Kind: EventSubscribed, Client: c.cfg.name, Name: channel, Resubscribed: again})
}

// single panics on a quorum Client, whose handles are Mutex and FencedMutex
// only; constructor names the call.
func (c *Client) single(constructor string) {
	if c.quorum != nil {
		panic("redisync: " + constructor + " is not available on a quorum Client (NewQuorum): only NewMutex and NewFencedMutex are")
	}
}
