package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/state"
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
	st, err := state.ReadSem(ctx, rc, k)
	if err != nil {
		return nil, err
	}
	info := &lockInfo{Name: name, Kind: kindSemaphore, Key: k.Holders, Locked: st.Taken > 0, TTLMillis: st.TTLMillis,
		Permits: &permitInfo{SizeKey: k.Size, Size: st.Size, Taken: st.Taken}}
	for _, sh := range st.Holders {
		h := holderInfo{Client: sh.ID, Permits: sh.Permits, TTLMillis: sh.TTLMillis, Lapsed: !sh.Live(), NoLease: sh.NoLease}
		if f, ok := layout.ParseField(sh.ID); ok {
			h.Client, h.Owner = f.Client, f.Hold
		}
		info.Holders = append(info.Holders, h)
	}
	if st.Size != nil {
		free := max(*st.Size-st.Taken, 0)
		info.Permits.Available = &free
	}
	if info.Waiters, err = readQueue(ctx, rc, k.Queue, k.Alive, k.Want); err != nil {
		return nil, err
	}
	return info, nil
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
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\n", shownClient(h.Client, h.ClientName), h.Owner, h.Permits, lease)
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
