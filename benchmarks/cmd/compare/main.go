// Command compare runs redisync, redsync, redislock and rueidislock through
// the scenarios against a redis-server it starts on a free
// loopback port, prints the table as Markdown and writes it to a file.
//
// Usage, from the benchmarks directory:
//
//	go run ./cmd/compare [-quick] [-d 2s] [-out RESULTS.md] [-addr host:port]
//	go run ./cmd/compare -quorum 3 [-d 2s]   # redisync's NewQuorum against redsync
//
// A full run takes about five minutes on two cores; -quick shortens every
// scenario for CI. The server is found on $PATH or in REDIS_SERVER_BIN;
// redis-benchmark (redis-tools) is needed for scenario 8 only.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/go-redisync/redisync/benchmarks"
	"github.com/go-redisync/redisync/internal/redisserver"
)

func main() {
	quick := flag.Bool("quick", false, "short run (a tenth of the sizes), for CI")
	d := flag.Duration("d", 0, "duration of each timed scenario per library (default 2s, 300ms with -quick)")
	poll := flag.Duration("poll", benchmarks.DefaultPoll, "retry delay of the polling libraries (redsync, redislock)")
	out := flag.String("out", "RESULTS.md", "Markdown file to write (\"\" for none)")
	addr := flag.String("addr", "", "use this Redis server instead of starting one (its figures then include whatever else it serves)")
	quorum := flag.Int("quorum", 0, "instead: redisync's NewQuorum Mutex against redsync on this many servers it starts (3 or 5), scenarios 1 to 3; -out defaults to RESULTS-quorum.md")
	flag.Parse()
	if *quorum > 0 {
		if !isFlagSet("out") {
			*out = "RESULTS-quorum.md"
		}
		if err := runQuorum(*quorum, *quick, *d, *poll, *out); err != nil {
			fmt.Fprintln(os.Stderr, "compare:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*quick, *d, *poll, *out, *addr); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

func run(quick bool, d, poll time.Duration, out, addr string) error {
	cfg := benchmarks.DefaultConfig()
	if quick {
		cfg = benchmarks.QuickConfig()
	}
	if d > 0 {
		cfg.Duration = d
	}
	cfg.Poll = poll
	cfg.Log = os.Stderr
	if addr == "" {
		srv, err := redisserver.StartServer()
		if err != nil {
			return err
		}
		defer func() { _ = srv.Stop() }()
		addr = srv.Addr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fmt.Fprintf(os.Stderr, "redis-server on %s\n", addr)
	r, err := benchmarks.Run(ctx, addr, cfg)
	if err != nil {
		return err
	}
	md := r.Markdown()
	return emit(md, out)
}

// isFlagSet reports whether the flag called name was given.
func isFlagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// runQuorum starts n servers and compares the quorum locks on them.
func runQuorum(n int, quick bool, d, poll time.Duration, out string) error {
	if d == 0 {
		d = benchmarks.DefaultConfig().Duration
		if quick {
			d = benchmarks.QuickConfig().Duration
		}
	}
	var addrs []string
	for range n {
		srv, err := redisserver.StartServer()
		if err != nil {
			return err
		}
		defer func() { _ = srv.Stop() }()
		addrs = append(addrs, srv.Addr)
	}
	fmt.Fprintf(os.Stderr, "redis-servers on %v\n", addrs)
	md := benchmarks.RunQuorum(context.Background(), addrs, benchmarks.QuorumPeers(poll), d).Markdown()
	return emit(md, out)
}

// emit prints the report md and, when out is set, writes it there too.
func emit(md, out string) error {
	fmt.Print(md)
	if out == "" {
		return nil
	}
	if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s\n", out)
	return nil
}
