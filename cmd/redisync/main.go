// Command redisync is the operator's and the newcomer's tool for the locks of
// the redisync library: it runs a live demo on an embedded server, inspects a
// lock by name, force-unlocks a stuck one, watches lock events as they happen,
// shows the busiest locks live, and benchmarks a server.
//
// Usage:
//
//	redisync demo    [--redis URL]                          live demo: worker processes contend, one is killed
//	redisync inspect [--json] [--kind KIND] NAME            what holds NAME: holders, hold counts, lease
//	redisync unlock  --force [--yes] [--kind KIND] NAME     delete a lock whoever holds it and wake its waiters
//	redisync watch   [--count N] [--duration D] [--renewals] [PATTERN]  live acquire/release/expire events
//	redisync top     [--sort ORDER] [--interval D] [--plain] [PATTERN]  live view of the busiest locks
//	redisync bench   [--ops N] [--concurrency C] [--sync-replicas N]    Mutex throughput and latency
//
// Every command that talks to Redis takes --redis URL (default $REDIS_URL,
// else redis://127.0.0.1:6379), --cluster and --sentinel-master NAME; inspect
// and unlock take --quorum URL once for each deployment of a quorum lock
// (redisync.NewQuorum) instead. Run "redisync help" for the details.
//
// The command reads lock data straight from Redis in the documented layouts
// (see internal/keys); the only write it makes outside demo and bench is
// unlock --force, which goes through the library.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1 // the command ran and failed: not found, unreachable, refused
	exitUsage = 2 // the command line was wrong

	exitInterrupted = 130 // stopped by SIGINT or SIGTERM, as shells report it
)

// A command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, std *stdio, args []string) error
	hidden  bool // internal: not listed in the usage text
}

// stdio is where a command reads and writes, so that tests and the demo's
// worker processes need no globals.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// commands lists the subcommands in the order the usage text shows them.
var commands []command

func init() {
	// Assigned here, not in the declaration: runHelp reads commands, which
	// would make an initialization cycle.
	commands = []command{
		{name: "demo", summary: "live demo of worker processes contending for locks on an embedded server", run: runDemo},
		{name: "inspect", summary: "show what holds a lock: kind, holders, hold counts, lease", run: runInspect},
		{name: "unlock", summary: "force-unlock a lock whoever holds it (asks first unless --yes)", run: runUnlock},
		{name: "watch", summary: "print lock events (acquire, release, expire) as they happen", run: runWatch},
		{name: "top", summary: "a live view of the busiest locks: holders, waiters, acquisitions per second", run: runTop},
		{name: "bench", summary: "measure Mutex throughput and latency, contended and uncontended", run: runBench},
		{name: "help", summary: "show this help", run: runHelp},
		{name: workerCommand, run: runWorker, hidden: true},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, &stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}

// run runs the subcommand named by args[0] and returns the exit code. Errors
// are printed on std.err as "redisync: ...".
func run(ctx context.Context, std *stdio, args []string) int {
	if len(args) == 0 {
		printUsage(std.err)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help":
		name = "help"
	}
	for _, c := range commands {
		if c.name != name {
			continue
		}
		err := c.run(ctx, std, rest)
		switch {
		case err == nil, errors.Is(err, errHelpShown):
			return exitOK
		case ctx.Err() != nil && errors.Is(err, context.Canceled):
			fmt.Fprintf(std.err, "redisync %s: interrupted\n", name)
			return exitInterrupted
		case errors.As(err, new(usageError)):
			fmt.Fprintf(std.err, "redisync %s: %v\nRun 'redisync %s -h' for usage.\n", name, err, name)
			return exitUsage
		default:
			fmt.Fprintf(std.err, "redisync %s: %v\n", name, err)
			return exitFail
		}
	}
	fmt.Fprintf(std.err, "redisync: unknown command %q\nRun 'redisync help' for usage.\n", name)
	return exitUsage
}

// runHelp prints the usage text.
func runHelp(_ context.Context, std *stdio, _ []string) error {
	printUsage(std.out)
	return nil
}

// printUsage writes the top-level usage text.
func printUsage(w io.Writer) {
	fmt.Fprint(w, `redisync: inspect, unlock, watch, view live and benchmark redisync locks; run a live demo.

Usage: redisync COMMAND [flags] [args]

Commands:
`)
	for _, c := range commands {
		if !c.hidden {
			fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
		}
	}
	fmt.Fprint(w, `
Connection flags (every command but help; demo and bench start an embedded
server when neither --redis nor REDIS_URL is given):
  --redis URL               redis://[user:pass@]host:port[/db], rediss:// for TLS;
                            several hosts as host1:port,host2:port or ?addr=host:port
                            (default $REDIS_URL, else redis://127.0.0.1:6379)
  --cluster                 the server is a Redis Cluster (hosts are seed nodes)
  --sentinel-master NAME    the hosts are Sentinels monitoring master NAME
  --quorum URL              inspect and unlock: one deployment of a quorum lock
                            (redisync.NewQuorum), given once for each, instead of --redis

Run 'redisync COMMAND -h' for a command's flags.
Exit status: 0 success, 1 failure (not found, unreachable, declined), 2 usage error,
130 interrupted.
`)
}

// usageError marks an error in the command line (exit status 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef returns a usageError with a formatted message.
func usagef(format string, args ...any) error {
	return usageError{err: fmt.Errorf(format, args...)}
}

// errHelpShown ends a command whose flags asked for help (-h): exit status 0.
var errHelpShown = errors.New("help shown")

// newFlagSet returns a flag set for subcommand name whose usage text shows
// synopsis and the flags, on std.err.
func newFlagSet(std *stdio, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("redisync "+name, flag.ContinueOnError)
	fs.SetOutput(std.err)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: redisync %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args with fs, letting flags and positional arguments mix
// ("inspect NAME --json" as well as "inspect --json NAME"); everything after
// "--" is positional. It returns the positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errHelpShown
			}
			return nil, usageError{err: err}
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}
