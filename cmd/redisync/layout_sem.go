package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"text/tabwriter"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/layout"
)

// A permitInfo is a Semaphore's account of its permits, by the server's
// clock: holders whose lease has lapsed are not counted (the next script
// that runs removes them, and their permits are free already).
type permitInfo struct {
	// Size is the size recorded by the first use of the name; absent when
	// the size key is missing (deleted to change the size: the next
	// acquire records its handle's).
	Size    *int64 `json:"size,omitempty"`
	SizeKey string `json:"size_key"`
	// Taken is the permits held by holders whose lease is running.
	Taken int64 `json:"taken"`
	// Available is Size - Taken (not below 0); absent with Size.
	Available *int64 `json:"available,omitempty"`
}

// detectSemaphore recognises redisync's Semaphore layout. The name itself is
// not a key: the holders are the hash redisync_sem:{NAME} (holder id ->
// "<permits>:<version>"), their leases the sorted set redisync_sem_lease:{NAME} (holder id
// -> end, server ms), the size the string redisync_sem_size:{NAME} (kept
// when nobody holds a permit), the queue redisync_sem_queue:{NAME} with
// heartbeats redisync_sem_alive:{NAME} and requests redisync_sem_want:{NAME}.
// Any of them present makes a Semaphore.
func detectSemaphore(ctx context.Context, rc rueidis.Client, name, _ string) (*lockInfo, error) {
	k := layout.SemOf(name)
	n, err := rc.Do(ctx, rc.B().Exists().Key(k.Holders, k.Leases, k.Size, k.Queue, k.Alive, k.Want).Build()).AsInt64()
	if err != nil {
		return nil, fmt.Errorf("read Semaphore keys of %q: %w", name, err)
	}
	if n == 0 {
		return nil, nil
	}
	info := &lockInfo{Name: name, Kind: "Semaphore", Key: k.Holders, Permits: &permitInfo{SizeKey: k.Size}}
	raw, err := rc.Do(ctx, rc.B().Get().Key(k.Size).Build()).ToString()
	switch {
	case rueidis.IsRedisNil(err):
	case err != nil:
		return nil, fmt.Errorf("read Semaphore size %q: %w", k.Size, err)
	default:
		size, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("key %q holds %q, not a Semaphore size", k.Size, raw)
		}
		info.Permits.Size = &size
	}
	if err := readSemHolders(ctx, rc, k, info); err != nil {
		return nil, err
	}
	if info.Waiters, err = readQueue(ctx, rc, k.Queue, k.Alive, k.Want); err != nil {
		return nil, err
	}
	return info, nil
}

// readSemHolders reads the holders and their leases into info, and counts
// the permits taken by those whose lease is running by the server's TIME.
func readSemHolders(ctx context.Context, rc rueidis.Client, k layout.Sem, info *lockInfo) error {
	entries, err := rc.Do(ctx, rc.B().Hgetall().Key(k.Holders).Build()).AsStrMap()
	if err != nil {
		return fmt.Errorf("read Semaphore holders %q: %w", k.Holders, err)
	}
	held := make(map[string]int64, len(entries))
	for id, entry := range entries {
		n, _, ok := layout.ParseSemEntry(entry)
		if !ok {
			return fmt.Errorf("read Semaphore holders %q: holder %q has %q, not <permits>:<version>", k.Holders, id, entry)
		}
		held[id] = n
	}
	leases, err := rc.Do(ctx, rc.B().Zrange().Key(k.Leases).Min("0").Max("-1").Withscores().Build()).AsZScores()
	if err != nil {
		return fmt.Errorf("read Semaphore leases %q: %w", k.Leases, err)
	}
	ends := make(map[string]int64, len(leases))
	for _, l := range leases {
		ends[l.Member] = int64(l.Score)
	}
	now, err := serverMillis(ctx, rc)
	if err != nil {
		return err
	}
	for id, permits := range held {
		h := holderInfo{Client: id, Permits: permits, TTLMillis: -1}
		if f, ok := layout.ParseField(id); ok {
			h.Client, h.Owner = f.Client, f.Hold
		}
		// A holder without a lease is not counted, as the scripts do not
		// count it: the next one removes it.
		if end, ok := ends[id]; ok {
			h.TTLMillis = end - now
			h.Lapsed = h.TTLMillis <= 0
		} else {
			h.Lapsed, h.NoLease = true, true
		}
		if !h.Lapsed {
			info.Permits.Taken += permits
			info.TTLMillis = max(info.TTLMillis, h.TTLMillis)
		}
		info.Holders = append(info.Holders, h)
	}
	sort.Slice(info.Holders, func(i, j int) bool {
		a, b := info.Holders[i], info.Holders[j]
		if a.Lapsed != b.Lapsed {
			return b.Lapsed
		}
		return a.Client+":"+a.Owner < b.Client+":"+b.Owner
	})
	info.Locked = info.Permits.Taken > 0
	if s := info.Permits.Size; s != nil {
		free := max(*s-info.Permits.Taken, 0)
		info.Permits.Available = &free
	}
	return nil
}

// semHeadline is a Semaphore's state after its kind and name.
func semHeadline(info *lockInfo) string {
	p := info.Permits
	size := "size unknown (" + p.SizeKey + " is missing: the next acquire records its handle's)"
	if p.Size != nil {
		size = fmt.Sprintf("size %d", *p.Size)
	}
	live := 0
	for _, h := range info.Holders {
		if !h.Lapsed {
			live++
		}
	}
	s := fmt.Sprintf("%s, %d %s taken by %d %s", size, p.Taken, plural(p.Taken, "permit", "permits"),
		live, plural(int64(live), "holder", "holders"))
	if p.Available != nil {
		s += fmt.Sprintf(", %d available", *p.Available)
	}
	return s
}

// printSemHolders writes a Semaphore's holders: permits and lease each.
func printSemHolders(w io.Writer, info *lockInfo) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  CLIENT\tHOLDER\tPERMITS\tLEASE")
	for _, h := range info.Holders {
		lease := formatTTL(h.TTLMillis)
		if h.NoLease {
			lease = "no lease recorded: not counted (the next call removes it)"
		} else if h.Lapsed {
			lease = fmt.Sprintf("lapsed %s ago: not counted (its permits are free; the next call removes it)", durationMS(-h.TTLMillis))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\n", h.Client, h.Owner, h.Permits, lease)
	}
	_ = tw.Flush()
}

// plural returns one or many by n.
func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
