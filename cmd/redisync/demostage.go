package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// reorderDelay is how long an event waits before it is shown. Workers write
// to separate pipes, so a release can be read after the acquisition it
// enabled; holding events back this long lets them be shown in the order of
// their timestamps (holds last tens of milliseconds, handovers well under one).
const reorderDelay = 30 * time.Millisecond

// sceneTimeout bounds one scene, so a demo that goes wrong ends with an error.
const sceneTimeout = 30 * time.Second

// A lane is one worker process on the stage.
type lane struct {
	label  string
	cmd    *exec.Cmd
	stderr bytes.Buffer // read only after the exit event
	state  laneState
	since  time.Time // when it began waiting
	exited bool
	served string // the FairMutex scene: its place in line and in service, for the next acquired line
}

// An eventKind is what a worker's line reports: the second word of the
// line, as the worker's reporter writes it.
type eventKind string

// The events of a worker, and the two the stage makes itself.
const (
	eventReady     eventKind = "ready"     // connected, about to contend
	eventWaiting   eventKind = "waiting"   // in Lock
	eventAcquired  eventKind = "acquired"  // holders, wait in ns[, fencing token]
	eventServed    eventKind = "served"    // the FairMutex scene: sequence, place in line
	eventReleasing eventKind = "releasing" // in Unlock
	eventWrote     eventKind = "wrote"     // the fenced scene: a write the Fence took (token)
	eventRejected  eventKind = "rejected"  // the fenced scene: a stale write refused (token)
	eventDone      eventKind = "done"      // its rounds are over
	eventExit      eventKind = "exit"      // the process ended (made by the stage)
	eventGarbled   eventKind = "garbled"   // a line that does not parse (made by the stage)
)

// A laneState is how a lane's worker stands, as the stage shows it.
type laneState string

// The states of a lane.
const (
	laneNew     laneState = ""
	laneStarted laneState = "start"
	laneWaiting laneState = "wait"
	laneHolding laneState = "HOLD"
	laneIdle    laneState = "idle"
	laneDone    laneState = "done"
	laneDead    laneState = "dead"   // killed by the demo
	lanePaused  laneState = "paused" // stopped by the demo (the fenced scene)
	laneStale   laneState = "stale"  // resumed, believing it still holds
)

// A workerEvent is one line from a worker, or its exit (kind eventExit).
type workerEvent struct {
	lane *lane
	at   time.Time
	kind eventKind
	vals []int64
	err  error // the exit error, for eventExit
}

// A stage plays one scene: it starts workers, shows their events in time
// order as one line per acquisition, and keeps the scene's numbers.
type stage struct {
	d       *demo
	name    string // the lock the workers contend for
	start   time.Time
	lanes   []*lane
	width   int // lanes shown, set by header
	events  chan workerEvent
	pending []workerEvent
	running int
	res     sceneResult

	lastRelease time.Time // the latest release, for the next handover
	releaser    *lane
	killedAt    time.Time // the latest kill, for the takeover
	pausedAt    time.Time // the latest pause, for the takeover
	failed      error
}

// spawn starts a worker process running the lock scene with args.
func (st *stage) spawn(args ...string) (*lane, error) {
	l := &lane{label: "w" + strconv.Itoa(len(st.lanes)+1)}
	argv := append([]string{workerCommand, "--name", st.name}, st.d.srv.args...)
	l.cmd = exec.CommandContext(st.d.ctx, st.d.exe, append(argv, args...)...)
	l.cmd.Env = append(os.Environ(), "REDIS_URL="+st.d.srv.url)
	l.cmd.Stderr = &l.stderr
	l.cmd.SysProcAttr = workerProcAttr()
	out, err := l.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := l.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start worker: %w", err)
	}
	st.lanes = append(st.lanes, l)
	st.running++
	st.res.workers++
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			st.events <- parseEvent(l, sc.Text())
		}
		st.events <- workerEvent{lane: l, at: time.Now(), kind: eventExit, err: l.cmd.Wait()}
	}()
	return l, nil
}

// parseEvent parses a worker's line "<unix-ns> <event> [values]".
func parseEvent(l *lane, line string) workerEvent {
	f := strings.Fields(line)
	ev := workerEvent{lane: l, at: time.Now(), kind: eventGarbled}
	if len(f) < 2 {
		return ev
	}
	if ns, err := strconv.ParseInt(f[0], 10, 64); err == nil {
		ev.at = time.Unix(0, ns)
	}
	ev.kind = eventKind(f[1])
	for _, s := range f[2:] {
		v, _ := strconv.ParseInt(s, 10, 64)
		ev.vals = append(ev.vals, v)
	}
	return ev
}

// until shows events until done reports true for one (after it is shown),
// or every worker has exited, or the scene times out.
func (st *stage) until(done func(workerEvent) bool) error {
	tick := time.NewTicker(reorderDelay / 3)
	defer tick.Stop()
	deadline := time.NewTimer(time.Until(st.start.Add(sceneTimeout)))
	defer deadline.Stop()
	for {
		select {
		case ev := <-st.events:
			i, _ := slices.BinarySearchFunc(st.pending, ev, func(a, b workerEvent) int { return a.at.Compare(b.at) })
			st.pending = slices.Insert(st.pending, i, ev)
		case <-tick.C:
			for len(st.pending) > 0 && (time.Since(st.pending[0].at) >= reorderDelay || st.running == 0) {
				ev := st.pending[0]
				st.pending = st.pending[1:]
				st.apply(ev)
				if st.failed != nil {
					return st.failed
				}
				if done(ev) || st.running == 0 && len(st.pending) == 0 {
					return nil
				}
			}
		case <-deadline.C:
			return fmt.Errorf("scene did not finish within %v", sceneTimeout)
		case <-st.d.ctx.Done():
			return st.d.ctx.Err()
		}
	}
}

// apply updates the stage with ev and prints a line for the events worth one.
func (st *stage) apply(ev workerEvent) {
	l := ev.lane
	switch ev.kind {
	case eventReady:
		l.state = laneStarted
	case eventWaiting:
		l.state, l.since = laneWaiting, ev.at
	case eventReleasing:
		l.state = laneIdle
		st.lastRelease, st.releaser = ev.at, l
	case eventDone:
		l.state = laneDone
	case eventAcquired:
		st.acquired(ev)
	case eventServed:
		st.served(ev)
	case eventWrote, eventRejected:
		st.fenced(ev)
	case eventExit:
		st.running--
		l.exited = true
		if l.state != laneDead {
			l.state = laneDone
			if ev.err != nil {
				st.failed = fmt.Errorf("worker %s failed: %v: %s", l.label, ev.err, strings.TrimSpace(l.stderr.String()))
			}
		}
	default:
		st.failed = fmt.Errorf("worker %s sent an unknown event %q", l.label, ev.kind)
	}
}

// acquired records and shows an acquisition: its handover from the previous
// holder, or its takeover after a kill.
func (st *stage) acquired(ev workerEvent) {
	l := ev.lane
	l.state = laneHolding
	st.res.acquisitions++
	// The oracle is the Redis counter each worker raises inside its critical
	// section. The lanes only draw the screen: events of different workers
	// come through different pipes, and under load one can be shown late, so
	// counting lanes marked HOLD could report an overlap that never was.
	holders := 1
	if len(ev.vals) > 0 {
		holders = int(ev.vals[0])
	}
	st.res.maxHolders = max(st.res.maxHolders, holders)
	limit := max(st.res.limit, 1)
	note := st.acquiredNote(ev, holders, limit)
	if len(ev.vals) > 2 {
		note += fmt.Sprintf(", token %d", ev.vals[2])
	}
	st.lastRelease, st.releaser, st.killedAt, st.pausedAt = time.Time{}, nil, time.Time{}, time.Time{}
	if l.served != "" {
		note, l.served = l.served+", "+note, ""
	}
	if holders > limit {
		note += fmt.Sprintf("  !! %d HOLDERS AT ONCE", holders)
	}
	st.show(ev.at, l.label+" acquired  "+note)
}

// acquiredNote says how the acquisition ev came, timing its handover or
// takeover; holders are inside now, limit allowed.
func (st *stage) acquiredNote(ev workerEvent, holders, limit int) string {
	l := ev.lane
	var note string
	switch {
	case limit > 1:
		// Several hold at once: a release does not hand over to one waiter,
		// so there is no handover to time.
		note = fmt.Sprintf("%d of %d inside", holders, limit)
		if len(ev.vals) > 1 {
			note += fmt.Sprintf(", waited %s", roundDuration(time.Duration(ev.vals[1])))
		}
	case !st.lastRelease.IsZero() && l.since.Before(st.lastRelease):
		// A handover: l was waiting when the lock was released.
		d := ev.at.Sub(st.lastRelease)
		st.res.handovers = append(st.res.handovers, d)
		note = fmt.Sprintf("%s after %s released", roundDuration(d), st.releaser.label)
		if st.releaser == l {
			note = fmt.Sprintf("again, %s after releasing", roundDuration(d))
		}
	case !st.killedAt.IsZero():
		st.res.takeover = ev.at.Sub(st.killedAt)
		note = fmt.Sprintf("took over %s after the kill: the dead holder's lease ran out", roundDuration(st.res.takeover))
	case !st.pausedAt.IsZero():
		st.res.takeover = ev.at.Sub(st.pausedAt)
		note = fmt.Sprintf("took over %s after the pause: the paused holder's lease ran out", roundDuration(st.res.takeover))
	case len(ev.vals) > 1:
		note = fmt.Sprintf("waited %s", roundDuration(time.Duration(ev.vals[1])))
	}
	return note
}

// kill ends a worker with SIGKILL, as a crash would, and shows it.
func (st *stage) kill(l *lane, why string) error {
	if err := l.cmd.Process.Kill(); err != nil {
		return err
	}
	l.state = laneDead
	st.killedAt = time.Now()
	st.lastRelease, st.releaser = time.Time{}, nil
	st.show(st.killedAt, l.label+" killed with SIGKILL "+why)
	return nil
}

// show prints one line: time since the scene began, every lane's state, msg.
func (st *stage) show(at time.Time, msg string) {
	var b strings.Builder
	fmt.Fprintf(&b, "  %6.2fs ", at.Sub(st.start).Seconds())
	for _, l := range st.lanes {
		b.WriteString(st.d.paint(l.state))
	}
	for range st.width - len(st.lanes) {
		b.WriteString(st.d.paint(laneNew))
	}
	b.WriteString("  " + msg)
	fmt.Fprintln(st.d.std.out, b.String())
}

// header prints the labels of n lanes above the lines of show.
func (st *stage) header(n int) {
	st.width = n
	var b strings.Builder
	b.WriteString("     time ")
	for i := range n {
		fmt.Fprintf(&b, " %-5s", "w"+strconv.Itoa(i+1))
	}
	fmt.Fprintln(st.d.std.out, b.String())
}

// stop kills the workers still running and waits until all have exited.
func (st *stage) stop() {
	for _, l := range st.lanes {
		if !l.exited {
			_ = l.cmd.Process.Kill()
		}
	}
	timeout := time.After(5 * time.Second)
	for st.running > 0 {
		select {
		case ev := <-st.events:
			if ev.kind == eventExit {
				st.running--
				ev.lane.exited = true
			}
		case <-timeout:
			return
		}
	}
}
