package redisyncotel_test

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/redisyncotel"
)

// The Observer records on a MeterProvider; here the SDK's with an in-memory
// reader, whose contents are printed (in a service, a periodic reader with an
// OTLP, Prometheus or stdout exporter).
func Example() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	obs, err := redisyncotel.NewObserver(redisyncotel.WithMeterProvider(mp))
	if err != nil {
		panic(err)
	}

	rc, err := standalone.NewClient() // rueidis.NewClient(...) in a program
	if err != nil {
		panic(err)
	}
	defer rc.Close()
	c, err := redisync.New(rc, redisync.WithObserver(obs))
	if err != nil {
		panic(err)
	}
	defer c.Close()

	m := c.NewMutex("order:42")
	for range 3 {
		m.Lock()
		//lint:ignore SA2001 the pair's measurements are printed
		m.Unlock()
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, md := range sm.Metrics {
			for _, dp := range points(md.Data) {
				prim, _ := dp.attrs.Value(redisyncotel.PrimitiveKey)
				fmt.Printf("%s{%s} %s\n", md.Name, prim.AsString(), dp.value)
			}
		}
	}
	// Output:
	// redisync.lock.wait.duration{Mutex} 3 samples
	// redisync.lock.hold.duration{Mutex} 3 samples
	// redisync.lock.acquisitions{Mutex} 3
	// redisync.lock.held{Mutex} 0
}

// A point is one data point, printed as its count or value.
type point struct {
	attrs attribute.Set
	value string
}

// points returns the data points of the int64 sums and float64 histograms.
func points(data metricdata.Aggregation) []point {
	var out []point
	switch d := data.(type) {
	case metricdata.Sum[int64]:
		for _, dp := range d.DataPoints {
			out = append(out, point{attrs: dp.Attributes, value: fmt.Sprint(dp.Value)})
		}
	case metricdata.Histogram[float64]:
		for _, dp := range d.DataPoints {
			out = append(out, point{attrs: dp.Attributes, value: fmt.Sprint(dp.Count, " samples")})
		}
	}
	return out
}
