package redisyncotel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/redisserver"
	"github.com/go-redisync/redisync/internal/redistest"
	"github.com/go-redisync/redisync/redisyncotel"
)

var standalone *redisserver.Target

func TestMain(m *testing.M) { redistest.Main(m, &standalone) }

// hang bounds waits that should end much sooner.
const hang = 10 * time.Second

// newClient returns a redisync Client on its own connections, closed when
// the test ends.
func newClient(t *testing.T, opts ...redisync.Option) *redisync.Client {
	t.Helper()
	rc, err := standalone.NewClient()
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	c, err := redisync.New(rc, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A primitive is one sort of lock, driven the ways the test needs.
type primitive struct {
	name redisync.Primitive
	// lock takes the lock through a waiting call with ctx and returns its
	// unlock; try makes a single attempt.
	lock func(ctx context.Context, c *redisync.Client, name string, opts ...redisync.Option) (unlock func(), err error)
	try  func(c *redisync.Client, name string) (unlock func(), ok bool)
	// block holds what keeps lock waiting.
	block func(c *redisync.Client, name string) (unlock func())
}

func mutexLike(name redisync.Primitive, newLocker func(c *redisync.Client, name string, opts ...redisync.Option) interface {
	LockContext(context.Context) error
	TryLock() bool
	Unlock()
}) primitive {
	return primitive{
		name: name,
		lock: func(ctx context.Context, c *redisync.Client, name string, opts ...redisync.Option) (func(), error) {
			m := newLocker(c, name, opts...)
			return m.Unlock, m.LockContext(ctx)
		},
		try: func(c *redisync.Client, name string) (func(), bool) {
			m := newLocker(c, name)
			return m.Unlock, m.TryLock()
		},
		block: func(c *redisync.Client, name string) func() {
			m := newLocker(c, name)
			if err := m.LockContext(context.Background()); err != nil {
				panic(err)
			}
			return m.Unlock
		},
	}
}

var primitives = []primitive{
	mutexLike(redisync.PrimitiveMutex, func(c *redisync.Client, name string, opts ...redisync.Option) interface {
		LockContext(context.Context) error
		TryLock() bool
		Unlock()
	} {
		return c.NewMutex(name, opts...)
	}),
	mutexLike(redisync.PrimitiveFencedMutex, func(c *redisync.Client, name string, opts ...redisync.Option) interface {
		LockContext(context.Context) error
		TryLock() bool
		Unlock()
	} {
		return c.NewFencedMutex(name, opts...)
	}),
	mutexLike(redisync.PrimitiveRWWrite, func(c *redisync.Client, name string, opts ...redisync.Option) interface {
		LockContext(context.Context) error
		TryLock() bool
		Unlock()
	} {
		return c.NewRWMutex(name, opts...)
	}),
	{
		name: redisync.PrimitiveRWRead,
		lock: func(ctx context.Context, c *redisync.Client, name string, opts ...redisync.Option) (func(), error) {
			rw := c.NewRWMutex(name, opts...)
			return rw.RUnlock, rw.RLockContext(ctx)
		},
		try: func(c *redisync.Client, name string) (func(), bool) {
			rw := c.NewRWMutex(name)
			return rw.RUnlock, rw.TryRLock()
		},
		block: func(c *redisync.Client, name string) func() { // a writer keeps readers out
			rw := c.NewRWMutex(name)
			rw.Lock()
			return rw.Unlock
		},
	},
	mutexLike(redisync.PrimitiveFairMutex, func(c *redisync.Client, name string, opts ...redisync.Option) interface {
		LockContext(context.Context) error
		TryLock() bool
		Unlock()
	} {
		return c.NewFairMutex(name, opts...)
	}),
	{
		name: redisync.PrimitiveSemaphore,
		lock: func(ctx context.Context, c *redisync.Client, name string, opts ...redisync.Option) (func(), error) {
			s := c.NewSemaphore(name, 1, opts...)
			return func() { s.Release(1) }, s.Acquire(ctx, 1)
		},
		try: func(c *redisync.Client, name string) (func(), bool) {
			s := c.NewSemaphore(name, 1)
			return func() { s.Release(1) }, s.TryAcquire(1)
		},
		block: func(c *redisync.Client, name string) func() {
			s := c.NewSemaphore(name, 1)
			if err := s.Acquire(context.Background(), 1); err != nil {
				panic(err)
			}
			return func() { s.Release(1) }
		},
	},
}

// meter returns an Observer on a fresh in-memory reader.
func meter(t *testing.T, opts ...redisyncotel.Option) (*redisyncotel.Observer, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	obs, err := redisyncotel.NewObserver(append([]redisyncotel.Option{redisyncotel.WithMeterProvider(mp)}, opts...)...)
	require.NoError(t, err)
	return obs, reader
}

// readings are the collected metrics by name.
type readings map[string]metricdata.Aggregation

func collect(t *testing.T, reader *sdkmetric.ManualReader) readings {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	out := readings{}
	for _, sm := range rm.ScopeMetrics {
		assert.Equal(t, redisyncotel.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// match reports whether a data point's attributes have every kv.
func match(set attribute.Set, kvs []attribute.KeyValue) bool {
	for _, kv := range kvs {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// sum adds up the int64 sum points of metric name that match kvs.
func (r readings) sum(t *testing.T, name string, kvs ...attribute.KeyValue) int64 {
	t.Helper()
	data, ok := r[name]
	if !ok {
		return 0
	}
	s, ok := data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is a %T", name, data)
	var n int64
	for _, dp := range s.DataPoints {
		if match(dp.Attributes, kvs) {
			n += dp.Value
		}
	}
	return n
}

// samples counts the histogram samples of metric name that match kvs.
func (r readings) samples(t *testing.T, name string, kvs ...attribute.KeyValue) uint64 {
	t.Helper()
	data, ok := r[name]
	if !ok {
		return 0
	}
	h, ok := data.(metricdata.Histogram[float64])
	require.True(t, ok, "%s is a %T", name, data)
	var n uint64
	for _, dp := range h.DataPoints {
		if match(dp.Attributes, kvs) {
			n += dp.Count
		}
	}
	return n
}

// TestMetrics drives each primitive through a waiting acquisition, a single
// attempt, a wait that times out, and a hold whose fixed lease runs out, and
// checks what the reader collected for it.
func TestMetrics(t *testing.T) {
	obs, reader := meter(t)
	c := newClient(t, redisync.WithObserver(obs))
	other := newClient(t) // holds what makes the waits time out; not observed
	for _, p := range primitives {
		t.Run(string(p.name), func(t *testing.T) {
			name := redistest.Name(t)
			ctx := context.Background()
			unlock, err := p.lock(ctx, c, name)
			require.NoError(t, err)
			time.Sleep(20 * time.Millisecond)
			r := collect(t, reader)
			assert.EqualValues(t, 1, r.sum(t, "redisync.lock.held", redisyncotel.PrimitiveKey.String(string(p.name))), "held while held")
			unlock()

			unlock, ok := p.try(c, name)
			require.True(t, ok)
			unlock()

			release := p.block(other, name)
			tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			_, err = p.lock(tctx, c, name)
			cancel()
			require.ErrorIs(t, err, context.DeadlineExceeded)
			release()

			unlock, err = p.lock(ctx, c, name, redisync.WithLease(100*time.Millisecond))
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				return collect(t, reader).sum(t, "redisync.lock.losses", redisyncotel.PrimitiveKey.String(string(p.name))) == 1
			}, hang, 5*time.Millisecond, "the lost lease is counted")
			unlock() // acknowledges the loss: nothing more is counted

			r = collect(t, reader)
			prim := redisyncotel.PrimitiveKey.String(string(p.name))
			assert.EqualValues(t, 3, r.sum(t, "redisync.lock.acquisitions", prim), "acquisitions")
			assert.EqualValues(t, 0, r.sum(t, "redisync.lock.acquisitions", prim, redisyncotel.ReentrantKey.Bool(true)), "reentrant acquisitions")
			assert.EqualValues(t, 1, r.sum(t, "redisync.lock.losses", prim), "losses")
			assert.EqualValues(t, 1, r.sum(t, "redisync.lock.wait.timeouts", prim), "timeouts")
			assert.EqualValues(t, 0, r.sum(t, "redisync.lock.held", prim), "held after the end")
			assert.EqualValues(t, 3, r.samples(t, "redisync.lock.wait.duration", prim), "wait samples: two acquisitions, one timeout")
			assert.EqualValues(t, 1, r.samples(t, "redisync.lock.wait.duration", prim, redisyncotel.ErrorTypeKey.String("timeout")), "timed-out wait samples")
			assert.EqualValues(t, 3, r.samples(t, "redisync.lock.hold.duration", prim), "hold samples")
			assert.EqualValues(t, 1, r.samples(t, "redisync.lock.hold.duration", prim, redisyncotel.ErrorTypeKey.String("lost")), "lost hold samples")
			assert.Zero(t, r.samples(t, "redisync.lock.wait.duration", redisyncotel.LockNameKey.String(name)), "no lock name without WithLockName")
		})
	}
}

// TestMetricsReentrant checks that a re-entry counts as an acquisition but
// not as another hold.
func TestMetricsReentrant(t *testing.T) {
	obs, reader := meter(t)
	c := newClient(t, redisync.WithObserver(obs))
	m := c.NewMutex(redistest.Name(t))
	ctx := redisync.WithOwner(context.Background())
	require.NoError(t, m.LockContext(ctx))
	require.NoError(t, m.LockContext(ctx))
	r := collect(t, reader)
	assert.EqualValues(t, 2, r.sum(t, "redisync.lock.acquisitions"))
	assert.EqualValues(t, 1, r.sum(t, "redisync.lock.acquisitions", redisyncotel.ReentrantKey.Bool(true)))
	assert.EqualValues(t, 1, r.sum(t, "redisync.lock.held"))
	require.NoError(t, m.UnlockContext(ctx))
	require.NoError(t, m.UnlockContext(ctx))
	r = collect(t, reader)
	assert.EqualValues(t, 0, r.sum(t, "redisync.lock.held"))
	assert.EqualValues(t, 1, r.samples(t, "redisync.lock.hold.duration"))
}

// TestMetricsClient checks the Client's own measurements: renewal batches,
// subscriptions and wake-ups, and the lock name with WithLockName.
func TestMetricsClient(t *testing.T) {
	obs, reader := meter(t, redisyncotel.WithLockName())
	c := newClient(t, redisync.WithObserver(obs), redisync.WithWatchdogTimeout(300*time.Millisecond))
	holder := newClient(t)
	name := redistest.Name(t)
	h := holder.NewMutex(name)
	h.Lock()
	acquired := make(chan error, 1)
	go func() {
		m := c.NewMutex(name)
		ctx, cancel := context.WithTimeout(context.Background(), hang)
		defer cancel()
		err := m.LockContext(ctx)
		if err == nil {
			time.Sleep(250 * time.Millisecond) // renewed every 100ms
			m.Unlock()
		}
		acquired <- err
	}()
	require.Eventually(t, func() bool {
		return collect(t, reader).sum(t, "redisync.subscriptions", redisyncotel.ResubscribedKey.Bool(false)) == 1
	}, hang, 5*time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	h.Unlock()
	require.NoError(t, <-acquired)

	r := collect(t, reader)
	lock := redisyncotel.LockNameKey.String(name)
	assert.EqualValues(t, 1, r.sum(t, "redisync.lock.wakeups", lock, redisyncotel.WakeupSourceKey.String("PubSub")))
	assert.EqualValues(t, 1, r.sum(t, "redisync.lock.acquisitions", lock, redisyncotel.PrimitiveKey.String(string(redisync.PrimitiveMutex))))
	assert.EqualValues(t, 1, r.samples(t, "redisync.lock.wait.duration", lock))
	assert.GreaterOrEqual(t, r.sum(t, "redisync.lock.renewals"), int64(1))
	assert.EqualValues(t, 0, r.sum(t, "redisync.lock.renewal.failures"))
	assert.GreaterOrEqual(t, r.samples(t, "redisync.lock.renewal.duration"), uint64(1))
}

// TestSpans checks the span of a waiting call: a child of the caller's span,
// named and attributed, an error when the wait times out, and none for a
// single attempt.
func TestSpans(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	obs, _ := meter(t, redisyncotel.WithTracerProvider(tp))
	c := newClient(t, redisync.WithObserver(obs))
	name := redistest.Name(t)

	ctx, parent := tp.Tracer("test").Start(context.Background(), "parent")
	m := c.NewMutex(name)
	require.NoError(t, m.LockContext(ctx))
	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	err := c.NewMutex(name).LockContext(tctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	m.Unlock()
	require.True(t, m.TryLock())
	m.Unlock()
	parent.End()

	var waits []sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		if s.Name() == "redisync.lock.wait" {
			waits = append(waits, s)
		}
	}
	require.Len(t, waits, 2, "one span per waiting call, none for TryLock")
	for _, s := range waits {
		assert.Equal(t, parent.SpanContext().SpanID(), s.Parent().SpanID())
		assert.Contains(t, s.Attributes(), redisyncotel.PrimitiveKey.String(string(redisync.PrimitiveMutex)))
		assert.Contains(t, s.Attributes(), redisyncotel.ClientKey.String(c.Name()))
	}
	assert.Equal(t, codes.Unset, waits[0].Status().Code)
	assert.Equal(t, codes.Error, waits[1].Status().Code)
	assert.GreaterOrEqual(t, waits[1].EndTime().Sub(waits[1].StartTime()), 50*time.Millisecond)
}
