// Command serverwork shows where redis-server's time goes in scenario 2
// (64 goroutines of one client, a name each, Lock+Unlock), per library: the
// server's whole CPU per pair (INFO cpu); the time spent running scripts,
// their inner commands included (INFO commandstats); and each command a pair
// runs, top-level or inside a script, with its time per call. What the
// scripts do not take is reading, parsing and answering the round trips,
// and the commands sent outside scripts.
//
// Usage, from the benchmarks directory:
//
//	go run ./cmd/serverwork [-d 3s] [-addr host:port] [-floor]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/benchmarks"
	"github.com/go-redisync/redisync/internal/redisserver"
)

func main() {
	d := flag.Duration("d", 3*time.Second, "how long each library runs")
	addr := flag.String("addr", "", "use this Redis server instead of starting one")
	floor := flag.Bool("floor", false, "also run benchmarks.Floor and FloorPlain: the least server work per pair in Redisson's layout")
	flag.Parse()
	peers := benchmarks.Peers(benchmarks.DefaultPoll)
	if *floor {
		peers = append(peers, benchmarks.Floor(), benchmarks.FloorPlain())
	}
	if err := run(peers, *d, *addr); err != nil {
		fmt.Fprintln(os.Stderr, "serverwork:", err)
		os.Exit(1)
	}
}

func run(peers []benchmarks.Peer, d time.Duration, addr string) error {
	if addr == "" {
		srv, err := redisserver.StartServer()
		if err != nil {
			return err
		}
		defer func() { _ = srv.Stop() }()
		addr = srv.Addr
	}
	ctx := context.Background()
	admin, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		return err
	}
	defer admin.Close()
	fmt.Printf("| library | pairs | server CPU per pair | in scripts | commands per pair: calls × µs each |\n|---|---|---|---|---|\n")
	for _, p := range peers {
		if err := admin.Do(ctx, admin.B().ConfigResetstat().Build()).Error(); err != nil {
			return err
		}
		cpu0, err := serverCPU(ctx, admin)
		if err != nil {
			return err
		}
		s, err := benchmarks.Parallel(ctx, p, addr, d)
		if err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
		cpu1, err := serverCPU(ctx, admin)
		if err != nil {
			return err
		}
		stats, err := admin.Do(ctx, admin.B().Info().Section("commandstats").Build()).ToString()
		if err != nil {
			return err
		}
		n := float64(s.N)
		var parts []string
		var scripts float64
		for _, c := range commandStats(stats) {
			if c.name == "info" || c.name == "config|resetstat" || c.calls < s.N/10 {
				continue // this tool's own, and what does not run each pair
			}
			parts = append(parts, fmt.Sprintf("%s %.1f × %.2f", c.name, float64(c.calls)/n, c.usecPerCall))
			if c.name == "evalsha" || c.name == "eval" {
				scripts += c.usec / n // a script's time includes its inner commands'
			}
		}
		fmt.Printf("| %s | %d | %.1f µs | %.1f µs | %s |\n", p.Name, s.N, (cpu1-cpu0)*1e6/n, scripts, strings.Join(parts, ", "))
	}
	return nil
}

// A commandStat is one line of INFO commandstats.
type commandStat struct {
	name        string
	calls       int
	usec        float64
	usecPerCall float64
}

// commandStats parses INFO commandstats, the dearest commands first.
func commandStats(info string) []commandStat {
	var all []commandStat
	for line := range strings.SplitSeq(info, "\n") {
		name, fields, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		c := commandStat{name: strings.TrimPrefix(name, "cmdstat_")}
		for f := range strings.SplitSeq(fields, ",") {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "calls":
				c.calls, _ = strconv.Atoi(v)
			case "usec":
				c.usec, _ = strconv.ParseFloat(v, 64)
			case "usec_per_call":
				c.usecPerCall, _ = strconv.ParseFloat(v, 64)
			}
		}
		all = append(all, c)
	}
	slices.SortFunc(all, func(a, b commandStat) int { return int(b.usec - a.usec) })
	return all
}

// serverCPU returns the server's user + system CPU seconds so far.
func serverCPU(ctx context.Context, admin rueidis.Client) (float64, error) {
	info, err := admin.Do(ctx, admin.B().Info().Section("cpu").Build()).ToString()
	if err != nil {
		return 0, err
	}
	var total float64
	for line := range strings.SplitSeq(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, err
			}
			total += f
		}
	}
	return total, nil
}
