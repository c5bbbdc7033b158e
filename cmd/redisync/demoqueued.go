package main

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/layout"
)

// servedPrefix names the FairMutex scene's order oracle: a counter each
// worker raises once it holds the lock, so its value is the worker's place
// in the order of service, whatever order the screen shows lines in.
const servedPrefix = "redisync_demo_served"

// Sizes of the queued scenes.
const (
	fairWorkers = 5
	semWorkers  = 6
	semSize     = 2
)

// fairScene shows a FairMutex serving its waiters in their order of arrival.
var fairScene = scene{
	title: "FairMutex: five workers queue one after another; they are served in exactly that order",
	intro: fmt.Sprintf("The demo itself holds the lock while w1 ... w%d join its queue, each only once the one\n"+
		"before it is queued. Then it unlocks: each release wakes only the waiter whose turn is\n"+
		"next, and they are served w1, w2, ... (a Redis counter raised by each worker served\n"+
		"checks the order; a Mutex would wake all waiters and let any of them win).", fairWorkers),
	play: playFair,
}

// semScene shows a Semaphore admitting at most its size at once.
var semScene = scene{
	title: fmt.Sprintf("Semaphore: %d workers share %d permits; never more than %d inside", semWorkers, semSize, semSize),
	intro: fmt.Sprintf("Each worker acquires one permit of a Semaphore of size %d, holds it 40-90 ms and\n"+
		"releases it, three times. A release wakes the waiters whose requests fit now; the\n"+
		"holders counter (a Redis counter raised inside) may reach %d and never more.", semSize, semSize),
	play: playSem,
}

// playFair plays the FairMutex scene; see fairScene.
func playFair(st *stage) error {
	st.res.order = []int64{}
	st.header(fairWorkers)
	c, err := redisync.New(st.d.rc, redisync.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		return err
	}
	defer c.Close()
	fm := c.NewFairMutex(st.name, redisync.WithWatchdogTimeout(demoWatchdog))
	if err := fm.LockContext(st.d.ctx); err != nil {
		return err
	}
	st.show(time.Now(), "the demo holds the FairMutex; the workers line up behind it")
	queue := layout.Aux(layout.FairQueuePrefix, st.name)
	for i := 1; i <= fairWorkers; i++ {
		l, err := st.spawn("--fair", "--seq", strconv.Itoa(i), "--rounds", "1", "--watchdog", demoWatchdog.String())
		if err != nil {
			return err
		}
		if err := st.until(func(ev workerEvent) bool { return ev.lane == l && ev.kind == eventWaiting }); err != nil {
			return err
		}
		// Spawn the next only once this one is in the queue, so that the
		// order of arrival is known: w1, w2, ...
		if err := st.awaitQueue(queue, int64(i)); err != nil {
			return err
		}
		st.show(time.Now(), fmt.Sprintf("%s queued, %s in line", l.label, ordinal(int64(i))))
	}
	st.show(time.Now(), "the demo unlocks: only the head of the queue is woken")
	if err := fm.UnlockContext(st.d.ctx); err != nil {
		return err
	}
	if err := st.until(func(workerEvent) bool { return false }); err != nil {
		return err
	}
	if len(st.res.order) != fairWorkers || slices.Contains(st.res.order, 0) {
		return fmt.Errorf("not every worker was served once: queue places in order of service %v", st.res.order)
	}
	return nil
}

// awaitQueue waits until the sorted set queue has at least n members,
// showing the workers' events meanwhile.
func (st *stage) awaitQueue(queue string, n int64) error {
	deadline := time.Now().Add(sceneTimeout / 2) // generous: starting a process can be slow under load
	for {
		got, err := st.d.rc.Do(st.d.ctx, st.d.rc.B().Zcard().Key(queue).Build()).AsInt64()
		if err != nil {
			return fmt.Errorf("read the queue: %w", err)
		}
		if got >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the queue has %d waiters, not %d, after %v", got, n, sceneTimeout/2)
		}
		sleep(st.d.ctx, 5*time.Millisecond)
		if err := st.d.ctx.Err(); err != nil {
			return err
		}
	}
}

// playSem plays the Semaphore scene; see semScene.
func playSem(st *stage) error {
	st.res.limit = semSize
	st.header(semWorkers)
	for range semWorkers {
		if _, err := st.spawn("--sem", strconv.Itoa(semSize), "--rounds", "3", "--watchdog", demoWatchdog.String()); err != nil {
			return err
		}
	}
	return st.until(func(workerEvent) bool { return false })
}

// served records a FairMutex worker's service: its place in the queue
// (vals[0]) and in the order of service (vals[1], from the Redis counter):
// st.res.order[position-1] = place.
// The acquired line that follows shows them.
func (st *stage) served(ev workerEvent) {
	if len(ev.vals) < 2 {
		st.failed = fmt.Errorf("worker %s sent a malformed served event", ev.lane.label)
		return
	}
	seq, position := ev.vals[0], ev.vals[1]
	if position < 1 || position > 1000 {
		st.failed = fmt.Errorf("worker %s was served %d-th", ev.lane.label, position)
		return
	}
	// Indexed by the counter, not by the order the events are read in:
	// lines from different processes can be read out of order under load.
	for int64(len(st.res.order)) < position {
		st.res.order = append(st.res.order, 0)
	}
	st.res.order[position-1] = seq
	ev.lane.served = fmt.Sprintf("served %s, queued %s", ordinal(position), ordinal(seq))
	if seq != position {
		ev.lane.served += "  !! OUT OF ORDER"
	}
}

// countInversions counts the pairs served in the opposite order of their
// places in the queue: 0 for strict FIFO.
func countInversions(order []int64) int {
	n := 0
	for i := range order {
		for j := i + 1; j < len(order); j++ {
			if order[i] > order[j] {
				n++
			}
		}
	}
	return n
}

// ordinal is n as "1st", "2nd", "3rd", "4th", ...
func ordinal(n int64) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.FormatInt(n, 10) + suffix
}
