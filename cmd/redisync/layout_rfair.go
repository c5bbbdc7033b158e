package main

import (
	"context"
	"fmt"

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
	info := &lockInfo{Name: name, Kind: "RFairLock", Key: name}
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
