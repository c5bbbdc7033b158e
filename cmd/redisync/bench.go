package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync"
)

// benchClients is how many Clients (each with its own connections, as
// separate processes would have) the contended scenario spreads over.
const benchClients = 4

// A benchScenario is one row of the bench table.
type benchScenario struct {
	name       string
	clients    int
	goroutines int
	shared     bool // all goroutines on one name (contended) or one name each
}

// A benchResult is a scenario's measurements.
type benchResult struct {
	ops      int
	elapsed  time.Duration
	p50, p99 time.Duration
}

// runBench is "redisync bench": Lock+Unlock pairs on one server, serial,
// parallel on separate names, and contended on one name across Clients.
func runBench(ctx context.Context, std *stdio, args []string) error {
	fs := newFlagSet(std, "bench", "bench [--ops N] [--concurrency C] [--sync-replicas N] [connection flags]")
	var cf connFlags
	cf.register(fs)
	ops := fs.Int("ops", 2000, "Lock+Unlock pairs per scenario")
	conc := fs.Int("concurrency", 8, "goroutines in the parallel and contended scenarios")
	syncReplicas := fs.Int("sync-replicas", 0, "each acquisition waits until `N` replicas have it (redisync's WithSyncReplicas, 1 s timeout; -1: every connected replica; 0: off)")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("unexpected arguments %q", rest)
	}
	if *ops < 1 || *conc < 1 {
		return usagef("--ops and --concurrency must be at least 1")
	}
	srv, err := serverFor(ctx, std, &cf)
	if err != nil {
		return err
	}
	defer srv.stop()
	opt := srv.opt

	scenarios := []benchScenario{
		{name: "uncontended, serial", clients: 1, goroutines: 1},
		{name: "uncontended, parallel", clients: 1, goroutines: *conc},
		{name: "contended, one name", clients: benchClients, goroutines: *conc, shared: true},
	}
	fmt.Fprintf(std.out, "Mutex Lock+Unlock, %d pairs per scenario, on %s\n\n", *ops, opt.InitAddress[0])
	tw := tabwriter.NewWriter(std.out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tclients\tgoroutines\tops/s\tp50\tp99\t")
	for _, s := range scenarios {
		libOpts := cf.libOptions()
		if *syncReplicas != 0 {
			libOpts = append(libOpts, redisync.WithSyncReplicas(*syncReplicas, time.Second))
		}
		r, err := s.run(ctx, opt, *ops, libOpts)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%s\t%s\t\n", s.name, s.clients, s.goroutines,
			float64(r.ops)/r.elapsed.Seconds(), roundDuration(r.p50), roundDuration(r.p99))
	}
	return tw.Flush()
}

// run measures the scenario: ops pairs spread over its goroutines. The
// latency of a pair includes any wait for the lock.
func (s benchScenario) run(ctx context.Context, opt rueidis.ClientOption, ops int, libOpts []redisync.Option) (benchResult, error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	clients := make([]*redisync.Client, s.clients)
	for i := range clients {
		rc, err := dial(ctx, opt)
		if err != nil {
			return benchResult{}, err
		}
		defer rc.Close()
		c, err := redisync.New(rc, append(libOpts, redisync.WithLogger(quiet))...)
		if err != nil {
			return benchResult{}, err
		}
		defer c.Close()
		clients[i] = c
	}
	prefix := fmt.Sprintf("redisync-bench:%x", rand.Uint32())
	lat := make([][]time.Duration, s.goroutines)
	errs := make([]error, s.goroutines)
	var wg sync.WaitGroup
	start := time.Now()
	for g := range s.goroutines {
		n := ops / s.goroutines
		if g < ops%s.goroutines {
			n++
		}
		name := fmt.Sprintf("%s:%d", prefix, g)
		if s.shared {
			name = prefix
		}
		m := clients[g%len(clients)].NewMutex(name)
		wg.Go(func() { lat[g], errs[g] = benchLoop(ctx, m, n) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := slices.Concat(lat...)
	for _, err := range errs {
		if err != nil {
			return benchResult{}, err
		}
	}
	slices.Sort(all)
	return benchResult{ops: len(all), elapsed: elapsed, p50: percentile(all, 50), p99: percentile(all, 99)}, nil
}

// benchLoop locks and unlocks m n times and returns each pair's duration.
func benchLoop(ctx context.Context, m *redisync.Mutex, n int) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, n)
	for range n {
		t := time.Now()
		if err := m.LockContext(ctx); err != nil {
			return lat, err
		}
		if err := m.UnlockContext(ctx); err != nil {
			return lat, err
		}
		lat = append(lat, time.Since(t))
	}
	return lat, nil
}

// percentile returns the p-th percentile of sorted durations (0 if none).
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, len(sorted)*p/100)]
}

// roundDuration shortens d for a table: three significant digits or so.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d >= time.Microsecond:
		return d.Round(time.Microsecond)
	}
	return d
}
