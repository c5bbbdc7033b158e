package main

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/layout"
)

// demoWatchdog is the workers' lease: short, so that a killed holder's lock
// comes back within the demo's patience (the library's default is 30 s).
const demoWatchdog = 1500 * time.Millisecond

// A scene is one part of the demo: a story told by worker processes.
type scene struct {
	title string
	intro string // what to look for, printed under the title
	play  func(st *stage) error
}

// scenes are played in order. A scene the RWMutex could add: readers
// overlap; a writer waits, new readers queue behind it, and it is served when
// the readers leave.
var scenes = []scene{
	{
		title: "Mutex: four worker processes contend for one lock",
		intro: "Each worker locks, holds 40-90 ms, unlocks, five times. A release wakes a waiter\nthrough Pub/Sub; one line per acquisition, and never two HOLDs on a line.",
		play:  playContention,
	},
	{
		title: "Mutex: the holder is killed with SIGKILL; its lease runs out and a waiter takes over",
		intro: fmt.Sprintf("Watchdog mode with a %v lease: renewed every %v while its holder lives.\nA dead holder cannot unlock, so the waiters get the lock when the lease runs out.", demoWatchdog, demoWatchdog/3),
		play:  playCrash,
	},
	fencedScene, // demofenced.go
	fairScene,   // demoqueued.go
	semScene,    // demoqueued.go
}

// A sceneResult holds one scene's numbers for the summary.
type sceneResult struct {
	title        string
	workers      int
	acquisitions int
	maxHolders   int
	// limit is how many may be inside at once: 1 for a lock (also when 0),
	// a Semaphore's size. The demo fails if the counter ever exceeds it.
	limit     int
	handovers []time.Duration
	takeover  time.Duration // from a kill or pause to the next acquisition; 0 if none
	lease     time.Duration // the lease that ran out before the takeover

	// fenced marks the fenced scene. It does not count holders: its point is
	// that a paused holder still believes it holds the lock after its lease
	// ran out. It counts the stale writes the fence rejected instead.
	fenced        bool
	staleRejected int

	// order is the FairMutex scene's service: order[i] is the place in the
	// queue of the i-th worker served; nil in the other scenes.
	order []int64
}

// A demo is one run of the scenes.
type demo struct {
	ctx   context.Context
	std   *stdio
	srv   *server
	rc    rueidis.Client // the demo's own connection: oracle fix-ups, cleanup
	exe   string
	color bool
}

// runDemo is "redisync demo [--redis URL]".
func runDemo(ctx context.Context, std *stdio, args []string) error {
	fs := newFlagSet(std, "demo", "demo [connection flags]")
	var cf connFlags
	cf.register(fs)
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("unexpected arguments %q", rest)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own binary to start workers: %w", err)
	}
	srv, err := serverFor(ctx, std, &cf)
	if err != nil {
		return err
	}
	defer srv.stop()
	rc, err := dial(ctx, srv.opt)
	if err != nil {
		return err
	}
	defer rc.Close()
	d := &demo{ctx: ctx, std: std, srv: srv, rc: rc, exe: exe, color: isTerminal(std.out)}
	fmt.Fprintln(std.out, "Each worker (w1, w2, ...) is a separate process. Its column shows HOLD while it holds\nthe lock, wait while blocked in LockContext, DEAD once killed, PAUSE while stopped.")
	run := fmt.Sprintf("redisync-demo:%04x", rand.Uint32N(1<<16))
	var results []sceneResult
	for i, sc := range scenes {
		fmt.Fprintf(std.out, "\n%s\n%s\n\n", d.bold(fmt.Sprintf("scene %d · %s", i+1, sc.title)), indent(sc.intro))
		st := &stage{d: d, name: fmt.Sprintf("%s:%d", run, i+1), start: time.Now(), events: make(chan workerEvent, 1024)}
		st.res.title = sc.title
		err := sc.play(st)
		st.stop()
		d.cleanup(st.name)
		if err != nil {
			return fmt.Errorf("scene %d: %w", i+1, err)
		}
		results = append(results, st.res)
	}
	return d.summary(results)
}

// playContention: four workers, five rounds each, short holds.
func playContention(st *stage) error {
	st.header(4)
	for range 4 {
		if _, err := st.spawn("--rounds", "5", "--watchdog", demoWatchdog.String()); err != nil {
			return err
		}
	}
	return st.until(func(workerEvent) bool { return false })
}

// playCrash: w1 takes the lock and hangs; w2 and w3 queue behind it; w1 is
// killed; after its lease runs out w2 or w3 takes over and both finish.
func playCrash(st *stage) error {
	st.header(3)
	victim, err := st.spawn("--hang", "--watchdog", demoWatchdog.String())
	if err != nil {
		return err
	}
	if err := st.until(func(ev workerEvent) bool { return ev.lane == victim && ev.kind == eventAcquired }); err != nil {
		return err
	}
	for range 2 {
		if _, err := st.spawn("--rounds", "3", "--watchdog", demoWatchdog.String()); err != nil {
			return err
		}
	}
	waiting := 0
	if err := st.until(func(ev workerEvent) bool {
		if ev.kind == eventWaiting {
			waiting++
		}
		return waiting == 2
	}); err != nil {
		return err
	}
	sleep(st.d.ctx, 500*time.Millisecond) // let the watchdog renew once, for realism
	if err := st.kill(victim, fmt.Sprintf("while holding; nobody renews its %v lease now", demoWatchdog)); err != nil {
		return err
	}
	// The dead worker never leaves the critical section by itself: account
	// for its exit in the holders counter, as its process ending does in fact.
	// Nobody can enter before its lease runs out, so this cannot hide an overlap.
	if err := st.d.rc.Do(st.d.ctx, st.d.rc.B().Decr().Key(layout.Aux(holdersPrefix, st.name)).Build()).Error(); err != nil {
		return err
	}
	return st.until(func(workerEvent) bool { return false })
}

// cleanup deletes what a scene left in Redis: the holders and served
// counters, the fenced scene's token counter and fence record, and the
// Semaphore's recorded size (a lock itself is gone once its last holder
// released it or its lease ran out; the rest are deleted in case a worker
// died). The scene's names are the demo's own, so deleting their counter
// cannot lower anyone's token.
func (d *demo) cleanup(name string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(d.ctx), 2*time.Second)
	defer cancel()
	del := []string{layout.Aux(holdersPrefix, name), layout.Aux(servedPrefix, name), layout.Aux(layout.TokenPrefix, name), layout.Aux(layout.FencePrefix, name)}
	for _, p := range []string{layout.SemHoldersPrefix, layout.SemLeasesPrefix, layout.SemSizePrefix, layout.SemQueuePrefix, layout.SemAlivePrefix, layout.SemWantPrefix,
		layout.FairLockPrefix, layout.FairQueuePrefix, layout.FairAlivePrefix, layout.MutexQueuePrefix, layout.MutexAlivePrefix, layout.MutexRunPrefix} {
		del = append(del, layout.Aux(p, name))
	}
	_ = d.rc.Do(ctx, d.rc.B().Del().Key(del...).Build()).Error()
}

// wrapParts joins a scene's numbers with commas into indented lines that fit
// 80 columns, each ending in a newline.
func wrapParts(parts []string) string {
	const indent, width = "      ", 80
	var b strings.Builder
	line := indent
	for i, p := range parts {
		if i < len(parts)-1 {
			p += ","
		}
		if line != indent && len(line)+1+len(p) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if line != indent {
			line += " "
		}
		line += p
	}
	b.WriteString(line + "\n")
	return b.String()
}

// summary prints every scene's numbers, two lines a scene so that they fit
// a terminal, and fails if any scene saw more inside at once than it allows,
// or served a FairMutex out of order.
func (d *demo) summary(results []sceneResult) error {
	fmt.Fprintf(d.std.out, "\n%s\n", d.bold("summary"))
	most, semMost, semLimit, inversions := 0, 0, 0, 0
	var failed error
	for i, r := range results {
		slices.Sort(r.handovers)
		limit := max(r.limit, 1)
		parts := []string{fmt.Sprintf("%d workers", r.workers), fmt.Sprintf("%d acquisitions", r.acquisitions)}
		switch {
		case r.fenced:
			parts = append(parts, fmt.Sprintf("%d stale %s rejected", r.staleRejected, plural(int64(r.staleRejected), "write", "writes")))
		case limit > 1:
			semMost, semLimit = max(semMost, r.maxHolders), limit
		default:
			most = max(most, r.maxHolders)
		}
		if !r.fenced {
			parts = append(parts, fmt.Sprintf("at most %d inside (%d allowed)", r.maxHolders, limit))
		}
		if len(r.handovers) > 0 {
			parts = append(parts, fmt.Sprintf("handover p50 %s, p99 %s",
				roundDuration(percentile(r.handovers, 50)), roundDuration(percentile(r.handovers, 99))))
		}
		if r.takeover > 0 {
			parts = append(parts, fmt.Sprintf("takeover %s (lease %v)", roundDuration(r.takeover), cmp.Or(r.lease, demoWatchdog)))
		}
		if r.order != nil {
			n := countInversions(r.order)
			inversions += n
			parts = append(parts, fmt.Sprintf("%d order %s", n, plural(int64(n), "inversion", "inversions")))
			if n > 0 && failed == nil {
				failed = fmt.Errorf("scene %d: FairMutex order violated: %d inversions (served in queue places %v)", i+1, n, r.order)
			}
		}
		if !r.fenced && r.maxHolders > limit && failed == nil {
			failed = fmt.Errorf("scene %d: %d inside at once, %d allowed", i+1, r.maxHolders, limit)
		}
		fmt.Fprintf(d.std.out, "  %d %s\n%s", i+1, strings.SplitN(r.title, ";", 2)[0], wrapParts(parts))
	}
	d.totals(most, semMost, semLimit, inversions)
	if most > 1 {
		return fmt.Errorf("mutual exclusion violated: %d holders at once", most)
	}
	return failed
}

// totals prints the summary's totals over the scenes, and what each figure
// means.
func (d *demo) totals(most, semMost, semLimit, inversions int) {
	fmt.Fprintf(d.std.out, "\nmost holders seen at once: %d (a Redis counter raised inside the critical\n  section; a lock allows 1)\n", most)
	if semLimit > 0 {
		fmt.Fprintf(d.std.out, "most inside the Semaphore at once: %d of %d permits (the same counter)\n", semMost, semLimit)
	}
	fmt.Fprintf(d.std.out, "order inversions: %d (pairs of FairMutex waiters served in the opposite order\n  of their arrival in the queue)\n", inversions)
	fmt.Fprint(d.std.out, "handover: from the start of one worker's Unlock to the next worker holding the\n  lock, across processes\n")
	fmt.Fprint(d.std.out, "takeover: from a holder's kill or pause to the next worker holding the lock,\n  once the lease ran out\n")
	fmt.Fprint(d.std.out, "stale writes rejected: writes with an outdated fencing token refused by the\n"+
		"  Fence; the fenced scene does not count holders, since a paused holder still\n"+
		"  believes it holds the lock: the token is what protects the data\n")
}

// laneText is how show prints each lane state.
var laneText = map[laneState]string{laneNew: "·", laneStarted: "·", laneIdle: "·", laneWaiting: "wait", laneHolding: "HOLD",
	laneDone: "done", laneDead: "DEAD", lanePaused: "PAUSE", laneStale: "STALE"}

// paint renders a lane state as a fixed-width cell, colored on a terminal.
func (d *demo) paint(state laneState) string {
	cell := fmt.Sprintf(" %-5s", laneText[state])
	if !d.color {
		return cell
	}
	switch state {
	case laneHolding:
		return "\x1b[1;32m" + cell + "\x1b[0m"
	case laneDead, laneStale:
		return "\x1b[1;31m" + cell + "\x1b[0m"
	case lanePaused:
		return "\x1b[1;33m" + cell + "\x1b[0m"
	case laneWaiting, laneDone:
		return "\x1b[2m" + cell + "\x1b[0m"
	}
	return cell
}

// bold renders s in bold on a terminal.
func (d *demo) bold(s string) string {
	if !d.color {
		return s
	}
	return "\x1b[1m" + s + "\x1b[0m"
}

// isTerminal reports whether w is a terminal that takes colors.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// indent prefixes every line of s with two spaces.
func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}
