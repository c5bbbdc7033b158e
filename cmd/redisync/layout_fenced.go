package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/state"
)

// A fenceInfo is a Fence's record: the hash redisync_fence:{NAME} with the
// highest token that has written to the resource and the value it wrote.
type fenceInfo struct {
	Key   string `json:"key"`
	Token uint64 `json:"token"` // the highest token accepted; lower ones are rejected
	// ValueBytes is the stored value's length; the value itself is the
	// application's data and is not printed.
	ValueBytes int `json:"value_bytes"`
}

// detectFencedMutex recognises Redisson's RFencedLock layout: a Mutex hash
// at NAME plus the token counter redisson_lock_token:{NAME}, a string without
// expiry. The counter outlives every hold, so a counter without a lock hash
// is a FencedMutex that nobody holds (its latest token is still worth
// knowing: the next one is higher).
func detectFencedMutex(ctx context.Context, rc rueidis.Client, name, keyType string) (*lockInfo, error) {
	if keyType != "hash" && keyType != "none" {
		return nil, nil
	}
	tokenKey := layout.MutexOf(name).Token
	raw, err := rc.Do(ctx, rc.B().Get().Key(tokenKey).Build()).ToString()
	switch {
	case rueidis.IsRedisNil(err):
		return nil, nil // no counter: a plain Mutex, or nothing
	case err != nil:
		return nil, fmt.Errorf("read token counter %q: %w", tokenKey, err)
	}
	token, err := strconv.ParseUint(raw, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("token counter %q holds %q, not a token", tokenKey, raw)
	}
	info := &lockInfo{Name: name, Kind: kindFencedMutex, Key: name}
	if keyType == "hash" {
		if info, err = detectMutex(ctx, rc, name, keyType); info == nil || err != nil {
			return info, err // a foreign hash keeps its own diagnosis
		}
		info.Kind = kindFencedMutex
	}
	info.Token, info.TokenKey = &token, tokenKey
	return info, nil
}

// detectFence recognises a name under which only a Fence record is stored.
func detectFence(ctx context.Context, rc rueidis.Client, name, keyType string) (*lockInfo, error) {
	if keyType != "none" {
		return nil, nil
	}
	f, err := readFence(ctx, rc, name)
	if f == nil || err != nil {
		return nil, err
	}
	return &lockInfo{Name: name, Kind: kindFence, Key: f.Key, Fence: f}, nil
}

// readFence reads the Fence record of name; nil when there is none (or
// the key is not a hash).
func readFence(ctx context.Context, rc rueidis.Client, name string) (*fenceInfo, error) {
	key := layout.MutexOf(name).Fence
	value, token, err := state.ReadFence(ctx, rc, key)
	var reply *rueidis.RedisError
	switch {
	case errors.As(err, &reply):
		return nil, nil // not a hash: not a Fence record
	case err != nil:
		return nil, err
	case token == 0:
		return nil, nil // nothing stored: no record
	}
	return &fenceInfo{Key: key, Token: token, ValueBytes: len(value)}, nil
}
