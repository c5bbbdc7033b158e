package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/layout"
)

// workerCommand is the hidden subcommand a demo worker process runs: the
// demo re-executes its own binary with it.
const workerCommand = "demo-worker"

// workerMaxHang bounds how long a --hang worker holds its lock if nobody
// kills it, so that a worker orphaned by a crashed demo goes away by itself.
const workerMaxHang = time.Minute

// holdersPrefix names the demo's oracle: a counter each worker increments
// right after acquiring and decrements right before releasing, so its value
// is the number of workers inside the critical section at once.
const holdersPrefix = "redisync_demo_holders"

// runWorker is the body of one demo worker. It reports on stdout, one line
// per event: "<unix-nanoseconds> <event> [values]", where event is
//
//	ready                     connected
//	waiting                   about to lock
//	served <seq> <position>   (--fair) holds the lock as the position-th of
//	                          the scene; seq is its place in the queue
//	acquired <holders> <ns> [<token>]  holds the lock; the counter's value
//	                          (0: not counted); the wait; a FencedMutex's token
//	wrote <token>             its write through the Fence was accepted
//	rejected <token>          its write was rejected: a stale token
//	releasing                 about to unlock (the start of the handover)
//	done                      finished its rounds
//
// Errors go to stderr, with a non-zero exit.
func runWorker(ctx context.Context, std *stdio, args []string) error {
	fs := newFlagSet(std, workerCommand, workerCommand+" [flags]")
	var cf connFlags
	cf.register(fs)
	var f workerFlags
	f.register(fs)
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	resumed := notifyContinue() // before anything can pause this process
	rc, err := cf.connect(ctx)
	if err != nil {
		return err
	}
	defer rc.Close()
	c, err := redisync.New(rc, redisync.WithWatchdogTimeout(f.watchdog),
		redisync.WithLogger(slog.New(slog.NewTextHandler(std.err, nil))))
	if err != nil {
		return err
	}
	defer c.Close()
	if err := warm(ctx, rc); err != nil {
		return err
	}
	report := reporter(std.out)
	report(eventReady)
	if f.fenced {
		var wait <-chan os.Signal
		if f.awaitCont {
			wait = resumed
		}
		return fencedWorker(ctx, c, f.name, f.lease, f.holdMin, wait, report)
	}
	var m demoLock = c.NewMutex(f.name)
	switch {
	case f.fair:
		m = c.NewFairMutex(f.name)
	case f.semSize > 0:
		m = semLock{c.NewSemaphore(f.name, f.semSize)}
	}
	for range f.rounds {
		if err := f.round(ctx, rc, m, report); err != nil {
			return err
		}
	}
	report(eventDone)
	return nil
}

// reporter returns how a worker reports an event to the demo: a line on w
// of the time in nanoseconds, the event, and its values.
func reporter(w io.Writer) func(event eventKind, values ...int64) {
	return func(event eventKind, values ...int64) {
		fields := []string{strconv.FormatInt(time.Now().UnixNano(), 10), string(event)}
		for _, v := range values {
			fields = append(fields, strconv.FormatInt(v, 10))
		}
		_, _ = io.WriteString(w, strings.Join(fields, " ")+"\n")
	}
}

// workerFlags are a demo worker's flags.
type workerFlags struct {
	name                           string
	rounds                         int
	holdMin, holdMax, think, lease time.Duration
	watchdog                       time.Duration
	hang, fenced, awaitCont, fair  bool
	seq, semSize                   int64
}

func (f *workerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.name, "name", "", "lock name")
	fs.IntVar(&f.rounds, "rounds", 3, "acquisitions before exiting")
	fs.DurationVar(&f.holdMin, "hold-min", 40*time.Millisecond, "shortest hold")
	fs.DurationVar(&f.holdMax, "hold-max", 90*time.Millisecond, "longest hold")
	fs.DurationVar(&f.think, "think", 20*time.Millisecond, "longest pause between rounds")
	fs.DurationVar(&f.watchdog, "watchdog", redisync.DefaultWatchdogTimeout, "watchdog timeout (lease)")
	fs.BoolVar(&f.hang, "hang", false, "hold the first acquisition until killed")
	fs.BoolVar(&f.fenced, "fenced", false, "lock a FencedMutex once and write through its Fence (the fenced scene)")
	fs.DurationVar(&f.lease, "lease", time.Second, "with --fenced: the fixed lease (WithLease)")
	fs.BoolVar(&f.awaitCont, "await-cont", false, "with --fenced: write only after being resumed with SIGCONT")
	fs.BoolVar(&f.fair, "fair", false, "lock a FairMutex instead of a Mutex (the FairMutex scene)")
	fs.Int64Var(&f.seq, "seq", 0, "with --fair: the worker's place in the queue, reported when served")
	fs.Int64Var(&f.semSize, "sem", 0, "acquire one permit of a Semaphore of this size instead of locking a Mutex")
}

// round is one acquisition of m by the worker: it waits, holds (counted in
// the scene's holders counter, and for a FairMutex served in order), and
// releases, reporting each step.
func (f *workerFlags) round(ctx context.Context, rc rueidis.Client, m demoLock, report func(eventKind, ...int64)) error {
	counter := layout.Aux(holdersPrefix, f.name)
	report(eventWaiting)
	start := time.Now()
	if err := m.LockContext(ctx); err != nil {
		return err
	}
	waited := time.Since(start)
	holders, err := rc.Do(ctx, rc.B().Incr().Key(counter).Build()).AsInt64()
	if err != nil {
		return err
	}
	if f.fair {
		// The order oracle: a counter raised by each worker served.
		position, err := rc.Do(ctx, rc.B().Incr().Key(layout.Aux(servedPrefix, f.name)).Build()).AsInt64()
		if err != nil {
			return err
		}
		report(eventServed, f.seq, position)
	}
	report(eventAcquired, holders, waited.Nanoseconds())
	if f.hang {
		select {
		case <-ctx.Done():
		case <-time.After(workerMaxHang):
		}
		return fmt.Errorf("hung worker was not killed")
	}
	sleep(ctx, f.holdMin+rand.N(f.holdMax-f.holdMin+1))
	if err := rc.Do(ctx, rc.B().Decr().Key(counter).Build()).Error(); err != nil {
		return err
	}
	report(eventReleasing)
	if err := m.UnlockContext(ctx); err != nil {
		return err
	}
	sleep(ctx, rand.N(f.think+1))
	return nil
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// A demoLock is what a worker locks: a Mutex, a FairMutex, or a permit of
// a Semaphore.
type demoLock interface {
	LockContext(ctx context.Context) error
	UnlockContext(ctx context.Context) error
}

// semLock takes one permit of a Semaphore as a lock.
type semLock struct{ s *redisync.Semaphore }

func (l semLock) LockContext(ctx context.Context) error { return l.s.Acquire(ctx, 1) }

// UnlockContext releases the permit. Release reports a failure by logging
// and a loss through Done/Err, which the worker's exit then shows.
func (l semLock) UnlockContext(context.Context) error {
	l.s.Release(1)
	return l.s.Err()
}

// warm opens the worker's connections before it reports ready. rueidis
// pipelines a standalone or Sentinel client's commands over several
// connections (two on two CPUs, four from four CPUs on), sends each keyed
// command on one of them at random, and dials each the first time it is
// picked: a fresh process that locks once would otherwise pay a dial and a
// handshake (5-9 ms measured) inside one of the handovers the scenes time,
// where a long-running service has its connections open. Enough keyed reads
// that every connection is picked with near certainty (one of four is
// missed by 32 with odds below 1 in 2,000).
func warm(ctx context.Context, rc rueidis.Client) error {
	for i := range 32 {
		key := "redisync_demo_warm:" + strconv.Itoa(i)
		if err := rc.Do(ctx, rc.B().Exists().Key(key).Build()).Error(); err != nil {
			return err
		}
	}
	return nil
}
