package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/state"
)

// An electionInfo is an Election's leader: its value and the number of its
// latest proclamation (1: the value it was elected with).
type electionInfo struct {
	Value string `json:"value"`
	Rev   int64  `json:"rev"`
}

// detectElection recognises redisync's Election layout: the leadership hash
// redisync_election:{NAME}, shaped like a Mutex's (the leader's hold) with
// the fields "value" and "rev". An Election without a leader has no key, so
// it cannot be told from no Election: only a led one is reported.
func detectElection(ctx context.Context, rc rueidis.Client, name, _ string) (*lockInfo, error) {
	l := layout.ElectionOf(name)
	fields, err := rc.Do(ctx, rc.B().Hgetall().Key(l.Key).Build()).AsStrMap()
	if err != nil {
		return nil, fmt.Errorf("read Election %q: %w", l.Key, err)
	}
	if len(fields) == 0 {
		return nil, nil
	}
	lead := layout.ParseLeadership(fields)
	rev, err := strconv.ParseInt(lead.Rev, 10, 64)
	h, ok := parseHolder(lead.Field, fields[lead.Field])
	if err != nil || !ok || h.Mode != "" || len(fields) != 3 {
		return nil, fmt.Errorf("key %q is not an Election's leadership: want a \"<client-uuid>:<n>\" hold, %q and %q, have %v",
			l.Key, layout.ElectionValue, layout.ElectionRev, fields)
	}
	info := &lockInfo{Name: name, Kind: kindElection, Key: l.Key, Locked: true, Leader: &electionInfo{Value: lead.Value, Rev: rev}}
	if info.TTLMillis, err = state.PTTL(ctx, rc, l.Key); err != nil {
		return nil, err
	}
	h.TTLMillis = info.TTLMillis
	info.Holders = []holderInfo{h}
	return info, nil
}

// electionHeadline is an Election's state after its kind and name.
func electionHeadline(info *lockInfo) string {
	return fmt.Sprintf("led, value %q (proclamation %d), leadership %s", info.Leader.Value, info.Leader.Rev,
		formatTTL(info.TTLMillis))
}
