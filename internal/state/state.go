// Package state reads what a primitive has in Redis, for the library's
// administration calls (IsLocked, TTL) and the redisync command's inspect and
// unlock, so that both read it the same way. Times are the server's.
package state

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/layout"
)

// PTTL returns key's remaining time to live in milliseconds: 0 when the key
// does not exist, -1 when it has no expiry.
func PTTL(ctx context.Context, rc rueidis.Client, key string) (int64, error) {
	ms, err := rc.Do(ctx, rc.B().Pttl().Key(key).Build()).AsInt64()
	switch {
	case err != nil:
		return 0, fmt.Errorf("read the lease of %q: %w", key, err)
	case ms == -2:
		return 0, nil
	}
	return ms, nil
}

// ServerMillis returns the server's TIME in milliseconds.
func ServerMillis(ctx context.Context, rc rueidis.Client) (int64, error) {
	t, err := rc.Do(ctx, rc.B().Time().Build()).AsIntSlice()
	if err == nil && len(t) != 2 {
		err = fmt.Errorf("unexpected reply %v", t)
	}
	if err != nil {
		return 0, fmt.Errorf("read the server's TIME: %w", err)
	}
	return t[0]*1000 + t[1]/1000, nil
}

// A Sem is a Semaphore's state: its holders, whose permits count as taken
// while their lease runs (the scripts remove the others, whose permits are
// free already).
type Sem struct {
	// Size is the size recorded by the first use of the name; nil when the
	// size key is missing (the next acquire records its handle's).
	Size    *int64
	Holders []SemHolder // live ones first, then by id
	Taken   int64       // the permits of the live holders
	// TTLMillis is the longest remaining lease of a live holder, 0 without
	// one.
	TTLMillis int64
}

// A SemHolder is one holder of a Semaphore: one term of a handle.
type SemHolder struct {
	ID      string // "<client-uuid>:<n>"
	Permits int64
	// TTLMillis is the time until its lease ends: zero or negative once it
	// has lapsed; meaningless with NoLease.
	TTLMillis int64
	NoLease   bool // no lease recorded: not counted
}

// Live reports whether h's permits count as taken.
func (h SemHolder) Live() bool { return !h.NoLease && h.TTLMillis > 0 }

// ReadSem reads the Semaphore at l.
func ReadSem(ctx context.Context, rc rueidis.Client, l layout.Sem) (Sem, error) {
	var s Sem
	raw, err := rc.Do(ctx, rc.B().Get().Key(l.Size).Build()).ToString()
	switch {
	case rueidis.IsRedisNil(err):
	case err != nil:
		return s, fmt.Errorf("read Semaphore size %q: %w", l.Size, err)
	default:
		size, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return s, fmt.Errorf("key %q holds %q, not a Semaphore size", l.Size, raw)
		}
		s.Size = &size
	}
	entries, err := rc.Do(ctx, rc.B().Hgetall().Key(l.Holders).Build()).AsStrMap()
	if err != nil {
		return s, fmt.Errorf("read Semaphore holders %q: %w", l.Holders, err)
	}
	leases, err := rc.Do(ctx, rc.B().Zrange().Key(l.Leases).Min("0").Max("-1").Withscores().Build()).AsZScores()
	if err != nil {
		return s, fmt.Errorf("read Semaphore leases %q: %w", l.Leases, err)
	}
	ends := make(map[string]int64, len(leases))
	for _, z := range leases {
		ends[z.Member] = int64(z.Score)
	}
	now, err := ServerMillis(ctx, rc)
	if err != nil {
		return s, err
	}
	for id, entry := range entries {
		n, _, ok := layout.ParseSemEntry(entry)
		if !ok {
			return s, fmt.Errorf("read Semaphore holders %q: holder %q has %q, not <permits>:<version>", l.Holders, id, entry)
		}
		h := SemHolder{ID: id, Permits: n, TTLMillis: -1, NoLease: true}
		if end, ok := ends[id]; ok {
			h.TTLMillis, h.NoLease = end-now, false
		}
		if h.Live() {
			s.Taken += n
			s.TTLMillis = max(s.TTLMillis, h.TTLMillis)
		}
		s.Holders = append(s.Holders, h)
	}
	sort.Slice(s.Holders, func(i, j int) bool {
		a, b := s.Holders[i], s.Holders[j]
		if a.Live() != b.Live() {
			return a.Live()
		}
		return a.ID < b.ID
	})
	return s, nil
}

// ReadFence returns the value stored in the fence record at key and the token
// that stored it: "" and 0 when nothing has been stored.
func ReadFence(ctx context.Context, rc rueidis.Client, key string) (value string, token uint64, err error) {
	fields, err := rc.Do(ctx, rc.B().Hmget().Key(key).Field(layout.FenceValue, layout.FenceToken).Build()).ToArray()
	if err == nil && len(fields) != 2 {
		err = fmt.Errorf("unexpected reply %v", fields)
	}
	if err == nil {
		value, err = fields[0].ToString()
	}
	if rueidis.IsRedisNil(err) {
		return "", 0, nil
	}
	if err == nil {
		token, err = fields[1].AsUint64()
	}
	if err != nil {
		return "", 0, fmt.Errorf("read the fence %q: %w", key, err)
	}
	return value, token, nil
}
