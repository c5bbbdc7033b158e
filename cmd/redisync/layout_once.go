package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/state"
)

// detectOnce recognises redisync's Once layout. The name itself is not a key:
// the claim of the caller running the function is the hash
// redisync_once:{NAME} (shaped like a Mutex's), and the completion the string
// redisync_once_done:{NAME}. Either present makes a Once; it is "locked"
// while someone runs the function.
func detectOnce(ctx context.Context, rc rueidis.Client, name, _ string) (*lockInfo, error) {
	l := layout.OnceOf(name)
	n, err := rc.Do(ctx, rc.B().Exists().Key(l.Claim, l.Done).Build()).AsInt64()
	if err != nil {
		return nil, fmt.Errorf("read Once keys of %q: %w", name, err)
	}
	if n == 0 {
		return nil, nil
	}
	fields, err := rc.Do(ctx, rc.B().Hgetall().Key(l.Claim).Build()).AsStrMap()
	if err != nil {
		return nil, fmt.Errorf("read Once claim %q: %w", l.Claim, err)
	}
	done, err := rc.Do(ctx, rc.B().Exists().Key(l.Done).Build()).AsBool()
	if err != nil {
		return nil, fmt.Errorf("read Once completion %q: %w", l.Done, err)
	}
	info := &lockInfo{Name: name, Kind: kindOnce, Key: l.Claim, Locked: len(fields) > 0, Done: &done}
	if info.TTLMillis, err = state.PTTL(ctx, rc, l.Claim); err != nil {
		return nil, err
	}
	for field, value := range fields {
		h, ok := parseHolder(field, value)
		if !ok || h.Mode != "" {
			return nil, fmt.Errorf("key %q is not a Once's claim: field %q = %q is not a \"<client-uuid>:<n>\" hold", l.Claim, field, value)
		}
		h.TTLMillis = info.TTLMillis
		info.Holders = append(info.Holders, h)
	}
	return info, nil
}

// onceHeadline is a Once's state after its kind and name.
func onceHeadline(info *lockInfo) string {
	state := "not done"
	if *info.Done {
		state = "done (its function succeeded; Do returns at once)"
	}
	if info.Locked {
		return state + "; its function is running, claim " + formatTTL(info.TTLMillis)
	}
	return state
}

// detectWaitGroup recognises Redisson's RCountDownLatch layout, a
// WaitGroup's: the string at NAME holding an integer counter. An absent key
// is a counter at zero, which cannot be told from no WaitGroup: only a
// present counter is reported.
func detectWaitGroup(ctx context.Context, rc rueidis.Client, name, keyType string) (*lockInfo, error) {
	if keyType != "string" {
		return nil, nil
	}
	v, err := rc.Do(ctx, rc.B().Get().Key(name).Build()).ToString()
	if err != nil {
		return nil, fmt.Errorf("read WaitGroup counter %q: %w", name, err)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, nil // a string that is not a counter: not this layout
	}
	return &lockInfo{Name: name, Kind: kindWaitGroup, Key: name, Locked: n > 0, Count: &n}, nil
}

// waitGroupHeadline is a WaitGroup's state after its kind and name.
func waitGroupHeadline(info *lockInfo) string {
	return fmt.Sprintf("count %d: Wait blocks until Done brings it to zero (channel %s)", *info.Count,
		layout.WaitGroupOf(info.Name).Channel)
}
