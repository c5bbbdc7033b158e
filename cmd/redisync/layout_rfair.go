package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/state"
)

// detectRFairLock recognises Redisson's RFairLock: the RLock hash at NAME
// (or none, between a release and the next holder) with Redisson's queue of
// waiters (layout.RFairQueuePrefix) or their eviction times beside it. A Go
// Mutex of the same name shares the hash, and so excludes the Java holders,
// but does not queue there: it takes a free lock ahead of the queue.
func detectRFairLock(ctx context.Context, rc rueidis.Client, name, keyType string) (*lockInfo, error) {
	if keyType != "hash" && keyType != "none" {
		return nil, nil
	}
	queue, timeouts := layout.Aux(layout.RFairQueuePrefix, name), layout.Aux(layout.RFairTimeoutPrefix, name)
	n, err := rc.Do(ctx, rc.B().Exists().Key(queue, timeouts).Build()).AsInt64()
	if err != nil {
		return nil, fmt.Errorf("read fair queue %q: %w", queue, err)
	}
	if n == 0 {
		return nil, nil // a Mutex, or nothing
	}
	info := &lockInfo{Name: name, Kind: kindRFairLock, Key: name}
	if keyType == "hash" {
		m, err := detectMutex(ctx, rc, name, keyType)
		if err != nil || m == nil {
			return nil, err // a hash of another shape: not a lock
		}
		info.Locked, info.TTLMillis, info.Holders = m.Locked, m.TTLMillis, m.Holders
	}
	entries, err := rc.Do(ctx, rc.B().Lrange().Key(queue).Start(0).Stop(-1).Build()).AsStrSlice()
	if err != nil {
		return nil, fmt.Errorf("read fair queue %q: %w", queue, err)
	}
	scores, err := rc.Do(ctx, rc.B().Zrange().Key(timeouts).Min("0").Max("-1").Withscores().Build()).AsZScores()
	if err != nil {
		return nil, fmt.Errorf("read fair queue timeouts %q: %w", timeouts, err)
	}
	evict := make(map[string]int64, len(scores))
	for _, s := range scores {
		evict[s.Member] = int64(s.Score)
	}
	now, err := state.ServerMillis(ctx, rc)
	if err != nil {
		return nil, err
	}
	for i, e := range entries {
		w := waiterInfo{ID: e, Client: e, Arrival: int64(i + 1)}
		if f, ok := layout.ParseField(e); ok {
			w.Client = f.Client
		}
		if at, ok := evict[e]; ok {
			left := at - now
			w.AliveMillis = &left
		}
		info.Waiters = append(info.Waiters, w)
	}
	return info, nil
}

// detectRPermitSemaphore recognises Redisson's RPermitExpirableSemaphore:
// its free permits, a string integer at NAME (absent until set), and its
// leased permits, the sorted set {NAME}:timeout of permit ids scored by the
// end of each lease. A permit whose lease has ended is free: the next call
// of a Java client gives it back to the count.
func detectRPermitSemaphore(ctx context.Context, rc rueidis.Client, name, keyType string) (*lockInfo, error) {
	if keyType != "string" && keyType != "none" {
		return nil, nil
	}
	permits := layout.Tagged(name) + ":" + layout.ExpirableSemTimeoutSuffix
	n, err := rc.Do(ctx, rc.B().Exists().Key(permits).Build()).AsInt64()
	if err != nil || n == 0 {
		return nil, err
	}
	info := &lockInfo{Name: name, Kind: kindRPermitExpirableSemaphore, Key: name, Permits: &permitInfo{SizeKey: name}}
	if keyType == "string" {
		free, err := rc.Do(ctx, rc.B().Get().Key(name).Build()).AsInt64()
		if err != nil {
			return nil, nil // not a count: not this layout
		}
		info.Permits.Available = &free
	}
	leases, err := rc.Do(ctx, rc.B().Zrange().Key(permits).Min("0").Max("-1").Withscores().Build()).AsZScores()
	if err != nil {
		return nil, fmt.Errorf("read permits %q: %w", permits, err)
	}
	now, err := state.ServerMillis(ctx, rc)
	if err != nil {
		return nil, err
	}
	for _, l := range leases {
		h := holderInfo{Client: permitID(l.Member), Permits: 1, TTLMillis: int64(l.Score) - now}
		switch {
		case int64(l.Score) >= layout.ExpirableSemNoLease:
			h.TTLMillis = -1
		case h.TTLMillis <= 0:
			h.Lapsed = true
		}
		if !h.Lapsed {
			info.Permits.Taken++
		}
		info.Holders = append(info.Holders, h)
	}
	info.Locked = info.Permits.Taken > 0
	if info.Permits.Available != nil {
		size := *info.Permits.Available + info.Permits.Taken
		info.Permits.Size = &size
	}
	return info, nil
}

// permitID returns a permit's id as Java and Go callers see it: a member of
// 16 bytes (recent Redisson's and redisync's form) as its 32 hex digits,
// any other (older Redisson's text) as it is.
func permitID(member string) string {
	if len(member) == 16 && (!utf8.ValidString(member) || strings.ContainsFunc(member, func(r rune) bool { return !unicode.IsPrint(r) })) {
		return hex.EncodeToString([]byte(member))
	}
	return member
}

// rpermitHeadline is an RPermitExpirableSemaphore's state after its kind
// and name.
func rpermitHeadline(info *lockInfo) string {
	free := "free permits unknown (" + info.Name + " is not set)"
	if p := info.Permits.Available; p != nil {
		free = fmt.Sprintf("%d %s free", *p, plural(*p, "permit", "permits"))
	}
	return fmt.Sprintf("%s, %d taken (Redisson's, which a Go ExpirableSemaphore shares)", free, info.Permits.Taken)
}

// printRPermits writes an RPermitExpirableSemaphore's permits, each with
// its lease.
func printRPermits(w io.Writer, info *lockInfo) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  PERMIT ID\tLEASE")
	for _, h := range info.Holders {
		lease := formatTTL(h.TTLMillis)
		switch {
		case h.TTLMillis < 0 && !h.Lapsed:
			lease = "no lease: held until released"
		case h.Lapsed:
			lease = fmt.Sprintf("ended %s ago: free (the next call of either side counts it back)", durationMS(-h.TTLMillis))
		}
		fmt.Fprintf(tw, "  %s\t%s\n", shownClient(h.Client, h.ClientName), lease)
	}
	_ = tw.Flush()
}
