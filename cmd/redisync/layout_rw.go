package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/state"
)

// A writerInfo is a writer waiting for an RWMutex: its claim in the set of
// waiting writers.
type writerInfo struct {
	Client     string `json:"client"`
	ClientName string `json:"client_name,omitempty"` // its name, as a holder's
	Owner      string `json:"owner"`
	// ClaimMillis is how long the writer's claim lasts unless the writer
	// tries again (a live one does, several times per claim), by the
	// server's clock. Zero or negative once it has lapsed: the claim is then
	// ignored, and removed by the next reader that comes.
	ClaimMillis int64 `json:"claim_ms"`
}

// detectRWMutex recognises Redisson's RReadWriteLock layout (layout.RW): a
// hash at NAME with a field "mode" ("read" or "write"), read and write holds'
// fields holding counts, a reader's timeout keys carrying its lease (the
// hash's expiry is the longest), and our waiting writers, a sorted set
// scored by the server time (ms) at which each writer's claim lapses.
func detectRWMutex(ctx context.Context, rc rueidis.Client, name, keyType string) (*lockInfo, error) {
	if keyType != "hash" {
		return nil, nil
	}
	fields, err := rc.Do(ctx, rc.B().Hgetall().Key(name).Build()).AsStrMap()
	if err != nil {
		return nil, fmt.Errorf("read lock %q: %w", name, err)
	}
	mode, ok := fields[layout.RWMode]
	if !ok || mode != layout.RWRead && mode != layout.RWWrite {
		return nil, nil
	}
	info := &lockInfo{Name: name, Kind: kindRWMutex, Key: name, Locked: true, Mode: mode}
	if info.TTLMillis, err = state.PTTL(ctx, rc, name); err != nil {
		return nil, err
	}
	for field, value := range fields {
		if field == layout.RWMode {
			continue
		}
		h, ok := parseHolder(field, value)
		if !ok {
			return nil, nil // not a lock field: a foreign hash that has "mode"
		}
		if h.Mode == layout.RWWrite {
			h.TTLMillis = info.TTLMillis
		} else {
			h.Mode = layout.RWRead
			if err := readHoldTTLs(ctx, rc, layout.RWOf(name).Timeouts(field), &h); err != nil {
				return nil, err
			}
		}
		info.Holders = append(info.Holders, h)
	}
	// The writer first, then readers by client and owner.
	sort.Slice(info.Holders, func(i, j int) bool {
		a, b := info.Holders[i], info.Holders[j]
		if a.Mode != b.Mode {
			return a.Mode == layout.RWWrite
		}
		return a.Client+":"+a.Owner < b.Client+":"+b.Owner
	})
	if info.WaitingWriters, err = readWaitingWriters(ctx, rc, layout.RWOf(name).Writers); err != nil {
		return nil, err
	}
	return info, nil
}

// readHoldTTLs reads the leases of a reader's h.Count read holds from their
// timeout keys prefix:1 ... prefix:n, and sets h.TTLMillis to the longest.
func readHoldTTLs(ctx context.Context, rc rueidis.Client, prefix string, h *holderInfo) error {
	n := min(h.Count, 1000) // a sane bound: one PTTL per hold
	cmds := make(rueidis.Commands, 0, n)
	for i := int64(1); i <= n; i++ {
		cmds = append(cmds, rc.B().Pttl().Key(prefix+":"+strconv.FormatInt(i, 10)).Build())
	}
	for i, r := range rc.DoMulti(ctx, cmds...) {
		ms, err := r.AsInt64()
		if err != nil {
			return fmt.Errorf("read lease of read hold %d (%s:%d): %w", i+1, prefix, i+1, err)
		}
		if ms == -2 {
			ms = 0 // gone: that hold's lease ran out
		}
		h.HoldTTLsMillis = append(h.HoldTTLsMillis, ms)
		if ms < 0 || h.TTLMillis >= 0 && ms > h.TTLMillis {
			h.TTLMillis = ms
		}
	}
	return nil
}

// readWaitingWriters reads the set of waiting writers (members
// "<uuid>:<owner>:write" scored by the server time in ms at which each
// claim lapses) and turns each score into the time left by the server's
// TIME, since the client's clock may differ from the server's.
func readWaitingWriters(ctx context.Context, rc rueidis.Client, key string) ([]writerInfo, error) {
	entries, err := rc.Do(ctx, rc.B().Zrange().Key(key).Min("0").Max("-1").Withscores().Build()).AsZScores()
	if err != nil {
		return nil, fmt.Errorf("read waiting writers %q: %w", key, err)
	}
	if len(entries) == 0 {
		return nil, nil
	}
	now, err := state.ServerMillis(ctx, rc)
	if err != nil {
		return nil, err
	}
	writers := make([]writerInfo, 0, len(entries))
	for _, e := range entries {
		w := writerInfo{Client: e.Member, ClaimMillis: int64(e.Score) - now}
		if f, ok := layout.ParseField(e.Member); ok {
			w.Client, w.Owner = f.Client, f.Hold
		}
		writers = append(writers, w)
	}
	return writers, nil
}
