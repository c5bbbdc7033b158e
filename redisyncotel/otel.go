// Package redisyncotel turns the events of redisync's locks into
// OpenTelemetry metrics and, optionally, spans around waits.
//
// It is a module of its own, so that the redisync module depends on rueidis
// alone; install it with
//
//	go get github.com/go-redisync/redisync/redisyncotel
//
// and give an [Observer] to the Client:
//
//	obs, err := redisyncotel.NewObserver() // the global MeterProvider
//	...
//	c, err := redisync.New(rc, redisync.WithObserver(obs))
//
// The instruments follow the style of OpenTelemetry's semantic conventions
// (durations as histograms in seconds, counts with curly-brace units):
//
//	redisync.lock.wait.duration      histogram, s    time from a waiting call's start to its end
//	redisync.lock.hold.duration      histogram, s    time from a hold's first acquire to its release or loss
//	redisync.lock.acquisitions       counter         acquisitions, reentrant ones included
//	redisync.lock.held               up-down counter holds currently held by this process
//	redisync.lock.losses             counter         holds lost (lease ran out, deleted, force-unlocked)
//	redisync.lock.wait.timeouts      counter         waits that ended with context.DeadlineExceeded
//	redisync.lock.wakeups            counter         wake-ups of waiters, by source
//	redisync.lock.renewals           counter         leases sent for renewal
//	redisync.lock.renewal.failures   counter         leases whose renewal call failed
//	redisync.lock.renewal.duration   histogram, s    round trip of a renewal batch
//	redisync.subscriptions           counter         Pub/Sub subscriptions confirmed (and re-established)
//
// Lock instruments carry the attribute redisync.primitive ("Mutex",
// "FencedMutex", "RWMutex.read", "RWMutex.write", "FairMutex", "Semaphore").
// The lock's name is added as redisync.lock.name only with [WithLockName]:
// names are often unbounded (one per order, per user), and every distinct
// value is a time series of its own.
package redisyncotel

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/go-redisync/redisync"
)

// ScopeName is the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/go-redisync/redisync/redisyncotel"

// Attribute keys.
const (
	// PrimitiveKey is the sort of lock, as in [redisync.Event].Primitive.
	PrimitiveKey = attribute.Key("redisync.primitive")
	// LockNameKey is the lock's name; set only with [WithLockName].
	LockNameKey = attribute.Key("redisync.lock.name")
	// ReentrantKey marks an acquisition by an owner that already held.
	ReentrantKey = attribute.Key("redisync.lock.reentrant")
	// WakeupSourceKey is what woke a waiter ("PubSub", "Local", "Timeout",
	// "Resubscribe").
	WakeupSourceKey = attribute.Key("redisync.wakeup.source")
	// ResubscribedKey marks a subscription established again.
	ResubscribedKey = attribute.Key("redisync.resubscribed")
	// ClientKey is the name of the Client (see [redisync.WithName]), on
	// spans only: the metrics' resource names the process already, and a
	// name per process would multiply their series.
	ClientKey = attribute.Key("redisync.client")
	// ErrorTypeKey is the semantic conventions' error.type: on a wait that
	// failed ("timeout", "canceled", "closed" or "_OTHER") and on a hold
	// that ended badly ("lost", "closed" or "_OTHER").
	ErrorTypeKey = attribute.Key("error.type")
)

// An Option configures an [Observer].
type Option func(*config)

type config struct {
	meters   metric.MeterProvider
	tracers  trace.TracerProvider
	lockName bool
}

// WithMeterProvider sets where the metrics go. The default is the global
// provider, [otel.GetMeterProvider].
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.meters = mp }
}

// WithTracerProvider turns on a span per waiting call (Lock, LockContext,
// Acquire...), named "redisync.lock.wait", child of the span in the call's
// context, from the start of the wait to the acquisition, failure or (Once,
// WaitGroup) completion. Without
// it, no spans are made.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tracers = tp }
}

// WithLockName adds the lock's name to every lock measurement and span as
// the attribute redisync.lock.name. Use it only when the set of names is
// small and fixed: each name makes time series of its own.
func WithLockName() Option {
	return func(c *config) { c.lockName = true }
}

// An Observer is a [redisync.Observer] that records OpenTelemetry metrics
// (and spans, with [WithTracerProvider]). It is safe for concurrent use; one
// Observer may serve several Clients.
type Observer struct {
	lockName bool
	tracer   trace.Tracer // nil without spans
	// attrs holds the attribute set of each primitive, made once.
	attrs map[redisync.Primitive]attribute.Set

	wait, hold, renewalDuration              metric.Float64Histogram
	acquisitions, losses, timeouts, wakeups  metric.Int64Counter
	renewals, renewalFailures, subscriptions metric.Int64Counter
	held                                     metric.Int64UpDownCounter
}

// durationBuckets are the histogram boundaries in seconds: from a millisecond
// (a free lock on a nearby server) to a minute (a long queue).
var durationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

var primitives = []redisync.Primitive{
	redisync.PrimitiveMutex, redisync.PrimitiveFencedMutex, redisync.PrimitiveRWRead,
	redisync.PrimitiveRWWrite, redisync.PrimitiveFairMutex, redisync.PrimitiveSemaphore,
}

// NewObserver returns an Observer that records on the options' providers.
// It fails only if an instrument cannot be created.
func NewObserver(opts ...Option) (*Observer, error) {
	cfg := config{}
	for _, opt := range opts {
		opt(&cfg)
	}
	if cfg.meters == nil {
		cfg.meters = otel.GetMeterProvider()
	}
	o := &Observer{lockName: cfg.lockName, attrs: make(map[redisync.Primitive]attribute.Set, len(primitives))}
	if cfg.tracers != nil {
		o.tracer = cfg.tracers.Tracer(ScopeName)
	}
	for _, p := range primitives {
		o.attrs[p] = attribute.NewSet(PrimitiveKey.String(string(p)))
	}
	m := cfg.meters.Meter(ScopeName)
	var errs []error
	histogram := func(name, desc string) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(durationBuckets...))
		errs = append(errs, err)
		return h
	}
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	o.wait = histogram("redisync.lock.wait.duration", "Time from the start of a waiting lock call to the acquisition or the failure.")
	o.hold = histogram("redisync.lock.hold.duration", "Time from a hold's first acquire to its release or loss.")
	o.renewalDuration = histogram("redisync.lock.renewal.duration", "Round trip of a batch of lease renewals.")
	o.acquisitions = counter("redisync.lock.acquisitions", "{acquisition}", "Acquisitions, reentrant ones included.")
	o.losses = counter("redisync.lock.losses", "{loss}", "Holds lost: the lease ran out or Redis no longer had the hold.")
	o.timeouts = counter("redisync.lock.wait.timeouts", "{wait}", "Waits that ended because their context's deadline passed.")
	o.wakeups = counter("redisync.lock.wakeups", "{wakeup}", "Wake-ups of waiting calls, by source.")
	o.renewals = counter("redisync.lock.renewals", "{lease}", "Leases sent for renewal.")
	o.renewalFailures = counter("redisync.lock.renewal.failures", "{lease}", "Leases whose renewal call failed; they are retried until their lease runs out.")
	o.subscriptions = counter("redisync.subscriptions", "{subscription}", "Pub/Sub subscriptions confirmed by Redis, and re-established after a reconnect.")
	held, err := m.Int64UpDownCounter("redisync.lock.held", metric.WithUnit("{hold}"),
		metric.WithDescription("Holds currently held by this process (reentrant acquisitions count once)."))
	errs = append(errs, err)
	o.held = held
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return o, nil
}

// Observe records e. It implements [redisync.Observer].
func (o *Observer) Observe(ctx context.Context, e redisync.Event) {
	switch e.Kind {
	case redisync.EventAcquired:
		o.acquisitions.Add(ctx, 1, o.lockAttrs(e, ReentrantKey.Bool(e.Reentrant)))
		if !e.Reentrant {
			o.held.Add(ctx, 1, o.lockAttrs(e))
		}
		if e.Wait > 0 { // a waiting call; a single attempt does not wait
			o.wait.Record(ctx, e.Wait.Seconds(), o.lockAttrs(e))
			o.span(ctx, e, "")
		}
	case redisync.EventCompleted: // a wait that ended without a hold (Once done, WaitGroup at zero)
		o.wait.Record(ctx, e.Wait.Seconds(), o.lockAttrs(e))
		o.span(ctx, e, "")
	case redisync.EventAcquireFailed:
		errType := waitErrorType(e.Cause)
		o.wait.Record(ctx, e.Wait.Seconds(), o.lockAttrs(e, ErrorTypeKey.String(errType)))
		if errType == "timeout" {
			o.timeouts.Add(ctx, 1, o.lockAttrs(e))
		}
		o.span(ctx, e, errType)
	case redisync.EventReleased, redisync.EventLost:
		o.held.Add(ctx, -1, o.lockAttrs(e))
		var extra []attribute.KeyValue
		if e.Cause != nil {
			extra = append(extra, ErrorTypeKey.String(holdErrorType(e)))
		}
		o.hold.Record(ctx, e.Hold.Seconds(), o.lockAttrs(e, extra...))
		if e.Kind == redisync.EventLost {
			o.losses.Add(ctx, 1, o.lockAttrs(e))
		}
	case redisync.EventWakeup:
		o.wakeups.Add(ctx, 1, o.lockAttrs(e, WakeupSourceKey.String(e.Source.String())))
	case redisync.EventRenewalBatch:
		o.renewals.Add(ctx, int64(e.Batch))
		if e.Failures > 0 {
			o.renewalFailures.Add(ctx, int64(e.Failures))
		}
		o.renewalDuration.Record(ctx, e.Duration.Seconds())
	case redisync.EventSubscribed:
		o.subscriptions.Add(ctx, 1, metric.WithAttributes(ResubscribedKey.Bool(e.Resubscribed)))
	}
}

// lockAttrs returns the attributes of a lock event: its primitive, its name
// when asked for, and extra.
func (o *Observer) lockAttrs(e redisync.Event, extra ...attribute.KeyValue) metric.MeasurementOption {
	set, ok := o.attrs[e.Primitive]
	if ok && !o.lockName && len(extra) == 0 {
		return metric.WithAttributeSet(set)
	}
	kvs := make([]attribute.KeyValue, 0, 2+len(extra))
	kvs = append(kvs, PrimitiveKey.String(string(e.Primitive)))
	if o.lockName {
		kvs = append(kvs, LockNameKey.String(e.Name))
	}
	return metric.WithAttributes(append(kvs, extra...)...)
}

// span records the span of a waiting call that has just ended, from its
// start (now minus its wait) to now, under the span in ctx.
func (o *Observer) span(ctx context.Context, e redisync.Event, errType string) {
	if o.tracer == nil {
		return
	}
	end := time.Now()
	attrs := []attribute.KeyValue{PrimitiveKey.String(string(e.Primitive))}
	if e.Client != "" {
		attrs = append(attrs, ClientKey.String(e.Client))
	}
	if o.lockName {
		attrs = append(attrs, LockNameKey.String(e.Name))
	}
	if e.Kind == redisync.EventAcquired {
		attrs = append(attrs, ReentrantKey.Bool(e.Reentrant))
	}
	_, span := o.tracer.Start(ctx, "redisync.lock.wait", trace.WithTimestamp(end.Add(-e.Wait)),
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	if errType != "" {
		span.SetAttributes(ErrorTypeKey.String(errType))
		span.SetStatus(codes.Error, e.Cause.Error())
	}
	span.End(trace.WithTimestamp(end))
}

// waitErrorType classifies the error of a failed wait.
func waitErrorType(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, redisync.ErrClosed):
		return "closed"
	}
	return "_OTHER"
}

// holdErrorType classifies how a hold ended badly.
func holdErrorType(e redisync.Event) string {
	switch {
	case e.Kind == redisync.EventLost:
		return "lost"
	case errors.Is(e.Cause, redisync.ErrClosed):
		return "closed"
	}
	return "_OTHER"
}
