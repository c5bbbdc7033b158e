// Command otelstdout locks a redisync Mutex three times with a redisyncotel
// observer and prints the OpenTelemetry metrics through the SDK's stdout
// exporter. Run it from the redisyncotel directory:
//
//	go run ./cmd/otelstdout                        # starts a throwaway redis-server (or miniredis)
//	go run ./cmd/otelstdout -redis 127.0.0.1:6379  # or uses yours
package main

import (
	"context"
	"flag"
	"log"

	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/redisserver"
	"github.com/go-redisync/redisync/redisyncotel"
)

func main() {
	addr := flag.String("redis", "", "Redis address; empty starts a throwaway server on loopback")
	flag.Parse()

	exporter, err := stdoutmetric.New(stdoutmetric.WithPrettyPrint())
	if err != nil {
		log.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exporter)))
	defer mp.Shutdown(context.Background()) // exports once more on the way out

	obs, err := redisyncotel.NewObserver(redisyncotel.WithMeterProvider(mp))
	if err != nil {
		log.Fatal(err)
	}
	opt := rueidis.ClientOption{InitAddress: []string{*addr}, DisableCache: true, ForceSingleClient: true}
	if *addr == "" {
		tg, err := redisserver.StartStandalone()
		if err != nil {
			log.Fatal(err)
		}
		defer tg.Stop()
		opt = tg.ClientOption()
	}
	rc, err := rueidis.NewClient(opt)
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	c, err := redisync.New(rc, redisync.WithObserver(obs))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	m := c.NewMutex("order:42")
	for range 3 {
		m.Lock()
		m.Unlock() //lint:ignore SA2001 the example only shows the metrics of lock/unlock pairs
	}
}
