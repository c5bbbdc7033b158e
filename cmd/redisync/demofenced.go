package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/state"
)

// fencedLease is the fixed lease of the fenced scene's workers: the time a
// paused holder keeps the lock before another may take it.
const fencedLease = time.Second

// fencedScene is the scene in which a paused holder's late write is fenced off.
var fencedScene = scene{
	title: "FencedMutex: a paused holder's lease runs out; its late write is rejected by the fence",
	intro: fmt.Sprintf("w1 locks with a fixed %v lease (WithLease) and is paused with SIGSTOP before it writes,\n"+
		"as a long GC pause or a stalled VM would. w2 gets the lock once that lease has run out,\n"+
		"with a higher token, and writes through the Fence. Then w1 is resumed with SIGCONT and\n"+
		"writes with its old token: the Fence rejects it (ErrStaleToken).", fencedLease),
	play: playFenced,
}

// playFenced plays the fenced scene; see fencedScene.
func playFenced(st *stage) error {
	st.res.fenced, st.res.lease = true, fencedLease
	if !canPause {
		fmt.Fprintln(st.d.std.out, "  skipped: pausing a worker needs SIGSTOP and SIGCONT (a Unix system)")
		return nil
	}
	st.header(2)
	lease := fencedLease.String()
	w1, err := st.spawn("--fenced", "--lease", lease, "--await-cont")
	if err != nil {
		return err
	}
	if err := st.until(func(ev workerEvent) bool { return ev.lane == w1 && ev.kind == eventAcquired }); err != nil {
		return err
	}
	if err := pauseProcess(w1.cmd.Process); err != nil {
		return err
	}
	w1.state, st.pausedAt = lanePaused, time.Now()
	st.show(st.pausedAt, fmt.Sprintf("w1 paused with SIGSTOP before its write; its %v lease runs on", fencedLease))
	w2, err := st.spawn("--fenced", "--lease", lease, "--hold-min", "100ms")
	if err != nil {
		return err
	}
	if err := st.until(func(ev workerEvent) bool { return ev.lane == w2 && ev.kind == eventExit }); err != nil {
		return err
	}
	if err := resumeProcess(w1.cmd.Process); err != nil {
		return err
	}
	w1.state = laneStale
	st.show(time.Now(), "w1 resumed with SIGCONT: it still believes it holds the lock, and writes")
	if err := st.until(func(workerEvent) bool { return false }); err != nil {
		return err
	}
	value, token, err := st.d.readFence(st.name)
	if err != nil {
		return err
	}
	st.show(time.Now(), fmt.Sprintf("the fence keeps w2's write: token %d, value %q", token, value))
	if st.res.staleRejected != 1 {
		return fmt.Errorf("the paused holder's stale write was not rejected (%d rejections)", st.res.staleRejected)
	}
	return nil
}

// fenced shows the fenced scene's own events, "wrote" and "rejected".
func (st *stage) fenced(ev workerEvent) {
	var token int64
	if len(ev.vals) > 0 {
		token = ev.vals[0]
	}
	l := ev.lane
	if ev.kind == eventWrote {
		st.show(ev.at, fmt.Sprintf("%s wrote through the fence with token %d: accepted", l.label, token))
		return
	}
	st.res.staleRejected++
	l.state = laneIdle
	st.show(ev.at, fmt.Sprintf("%s's write with token %d REJECTED by the fence (ErrStaleToken): it has seen a higher one", l.label, token))
}

// readFence reads the Fence record of name.
func (d *demo) readFence(name string) (value string, token int64, err error) {
	value, t, err := state.ReadFence(d.ctx, d.rc, layout.Aux(layout.FencePrefix, name))
	return value, int64(t), err
}

// fencedWorker is a demo worker's body in the fenced scene: it locks a
// FencedMutex with a fixed lease, writes a value through the Fence of the
// same name with its token, and unlocks. Given resumed, it writes only once
// a SIGCONT arrives on it, so that its write follows its pause however
// slowly the machine runs; otherwise it works for hold first.
func fencedWorker(ctx context.Context, c *redisync.Client, name string, lease, hold time.Duration,
	resumed <-chan os.Signal, report func(eventKind, ...int64)) error {
	fm := c.NewFencedMutex(name, redisync.WithLease(lease))
	report(eventWaiting)
	start := time.Now()
	token, err := fm.LockToken(ctx)
	if err != nil {
		return err
	}
	report(eventAcquired, 0, time.Since(start).Nanoseconds(), int64(token))
	if resumed != nil {
		select {
		case <-resumed:
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(workerMaxHang):
			return errors.New("paused worker was not resumed")
		}
	} else {
		sleep(ctx, hold)
	}
	err = c.NewFence(name).Set(ctx, token, fmt.Sprintf("state written with token %d", token))
	switch {
	case errors.Is(err, redisync.ErrStaleToken):
		report(eventRejected, int64(token))
		// Its hold was lost: Unlock says so, and there is nothing to release.
		if err := fm.UnlockContext(ctx); err != nil && !errors.Is(err, redisync.ErrLockLost) {
			return err
		}
		report(eventDone)
		return nil
	case err != nil:
		return err
	}
	report(eventWrote, int64(token))
	report(eventReleasing)
	if err := fm.UnlockContext(ctx); err != nil {
		return err
	}
	report(eventDone)
	return nil
}
