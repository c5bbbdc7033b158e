package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/state"
)

// A waiterInfo is one waiter queued for a FairMutex, or one request queued
// for a Semaphore, in queue order.
type waiterInfo struct {
	// ID is the waiter's id, "<client-uuid>:w<n>": one per waiting call.
	ID         string `json:"id"`
	Client     string `json:"client"`                // the waiting Client's UUID
	ClientName string `json:"client_name,omitempty"` // its name, as a holder's
	// Arrival is its place number in the queue's sorted set: 1, 2, ... in
	// the order of arrival (numbers of waiters gone are not reused).
	Arrival int64 `json:"arrival"`
	// Wants is the permits a Semaphore request asks for.
	Wants int64 `json:"wants,omitempty"`
	// AliveMillis is how long the waiter's heartbeat lasts unless renewed
	// (its Client renews it every third of the timeout while it waits), by
	// the server's clock. Zero or negative once it has lapsed: the waiter is
	// dead, and the next script that reads the queue removes it. Absent when
	// no heartbeat is recorded.
	AliveMillis *int64 `json:"alive_ms,omitempty"`
}

// fairKeys are a FairMutex's keys: lock hash, queue, heartbeats.
func fairKeys(name string) (lock, queue, alive string) {
	l := layout.FairOf(name)
	return l.Key, l.Queue, l.Alive
}

// detectFairMutex recognises redisync's FairMutex layout. The name itself is
// not a key: the lock is the hash redisync_fair:{NAME} (shaped like a
// Mutex's), the queue the sorted set redisync_fair_queue:{NAME} (waiter id
// -> arrival), the heartbeats redisync_fair_alive:{NAME} (waiter id ->
// deadline, server ms). Any of them present makes a FairMutex: a free lock
// can have waiters for a moment, and a held one none.
func detectFairMutex(ctx context.Context, rc rueidis.Client, name, _ string) (*lockInfo, error) {
	lock, queue, alive := fairKeys(name)
	n, err := rc.Do(ctx, rc.B().Exists().Key(lock, queue, alive).Build()).AsInt64()
	if err != nil {
		return nil, fmt.Errorf("read FairMutex keys of %q: %w", name, err)
	}
	if n == 0 {
		return nil, nil
	}
	fields, err := rc.Do(ctx, rc.B().Hgetall().Key(lock).Build()).AsStrMap()
	if err != nil {
		return nil, fmt.Errorf("read FairMutex lock %q: %w", lock, err)
	}
	info := &lockInfo{Name: name, Kind: kindFairMutex, Key: lock, Locked: len(fields) > 0}
	for field, value := range fields {
		h, ok := parseHolder(field, value)
		if !ok || h.Mode != "" {
			return nil, fmt.Errorf("key %q is not a FairMutex's lock: field %q = %q is not a \"<client-uuid>:<n>\" hold count", lock, field, value)
		}
		info.Holders = append(info.Holders, h)
	}
	sort.Slice(info.Holders, func(i, j int) bool {
		return info.Holders[i].Client+":"+info.Holders[i].Owner < info.Holders[j].Client+":"+info.Holders[j].Owner
	})
	if info.TTLMillis, err = state.PTTL(ctx, rc, lock); err != nil {
		return nil, err
	}
	for i := range info.Holders {
		info.Holders[i].TTLMillis = info.TTLMillis
	}
	if info.Waiters, err = readQueue(ctx, rc, queue, alive, ""); err != nil {
		return nil, err
	}
	return info, nil
}

// readQueue reads a queue (waiter id -> arrival) in order, with each
// waiter's heartbeat from alive (waiter id -> deadline, server ms) turned
// into the time left by the server's TIME, and, given want (a hash of
// waiter id -> permits), each request's permits.
func readQueue(ctx context.Context, rc rueidis.Client, queue, alive, want string) ([]waiterInfo, error) {
	entries, err := rc.Do(ctx, rc.B().Zrange().Key(queue).Min("0").Max("-1").Withscores().Build()).AsZScores()
	if err != nil {
		return nil, fmt.Errorf("read queue %q: %w", queue, err)
	}
	if len(entries) == 0 {
		return nil, nil
	}
	beats, err := rc.Do(ctx, rc.B().Zrange().Key(alive).Min("0").Max("-1").Withscores().Build()).AsZScores()
	if err != nil {
		return nil, fmt.Errorf("read heartbeats %q: %w", alive, err)
	}
	deadlines := make(map[string]int64, len(beats))
	for _, b := range beats {
		deadlines[b.Member] = int64(b.Score)
	}
	var wants map[string]int64
	if want != "" {
		if wants, err = rc.Do(ctx, rc.B().Hgetall().Key(want).Build()).AsIntMap(); err != nil {
			return nil, fmt.Errorf("read requests %q: %w", want, err)
		}
	}
	now, err := state.ServerMillis(ctx, rc)
	if err != nil {
		return nil, err
	}
	waiters := make([]waiterInfo, 0, len(entries))
	for _, e := range entries {
		w := waiterInfo{ID: e.Member, Client: e.Member, Arrival: int64(e.Score), Wants: wants[e.Member]}
		if f, ok := layout.ParseField(w.ID); ok {
			w.Client = f.Client
		}
		if d, ok := deadlines[e.Member]; ok {
			left := d - now
			w.AliveMillis = &left
		}
		waiters = append(waiters, w)
	}
	return waiters, nil
}

// printWaiters writes the queue in order: a FairMutex's or a Mutex's
// waiters, or a Semaphore's requests with the permits each wants.
func printWaiters(w io.Writer, info *lockInfo) {
	if len(info.Waiters) == 0 {
		return
	}
	sem := info.Kind == kindSemaphore
	switch {
	case sem:
		fmt.Fprintln(w, "\n  queued requests, in order (each is granted when it fits together with those ahead):")
	case info.Kind == kindMutex:
		fmt.Fprintln(w, "\n  redisync waiters, in queue order (a release hands the lock to the first live one; Redisson's waiters do not queue):")
	case info.Kind == kindRFairLock:
		fmt.Fprintln(w, "\n  Redisson's waiters, in queue order (each is woken alone when its turn comes, on its own channel; a Go Mutex does not queue here):")
	default:
		fmt.Fprintln(w, "\n  waiters, in queue order (each is woken alone when its turn comes):")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if sem {
		fmt.Fprintln(tw, "  #\tWAITER\tCLIENT\tWANTS\tHEARTBEAT")
	} else if info.Kind == kindRFairLock {
		fmt.Fprintln(tw, "  #\tWAITER\tEVICTION") // Redisson's: its id is the whole client
	} else {
		fmt.Fprintln(tw, "  #\tWAITER\tCLIENT\tHEARTBEAT")
	}
	for i, wt := range info.Waiters {
		beat := "no heartbeat recorded"
		switch ms := wt.AliveMillis; {
		case info.Kind == kindRFairLock && ms == nil:
			beat = "no eviction time recorded"
		case info.Kind == kindRFairLock && *ms > 0:
			beat = "evicted in " + durationMS(*ms) + " unless it gets the lock first"
		case info.Kind == kindRFairLock:
			beat = "overdue by " + durationMS(-*ms) + ": the next attempt evicts it"
		case ms != nil && *ms > 0:
			beat = "alive for " + durationMS(*ms) + " unless renewed"
		case ms != nil:
			beat = "dead since " + durationMS(-*ms) + ": will be skipped"
		}
		if sem {
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%d\t%s\n", i+1, wt.ID, shownClient(wt.Client, wt.ClientName), wt.Wants, beat)
		} else if info.Kind == kindRFairLock {
			fmt.Fprintf(tw, "  %d\t%s\t%s\n", i+1, wt.ID, beat)
		} else {
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\n", i+1, wt.ID, shownClient(wt.Client, wt.ClientName), beat)
		}
	}
	_ = tw.Flush()
}
