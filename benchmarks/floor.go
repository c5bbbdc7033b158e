package benchmarks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/redis/rueidis"
)

// Floor is no lock library but the least server work a lock in Redisson's
// layout can do per uncontended pair, for comparison (cmd/serverwork -floor):
// one script that takes a free lock (EXISTS, HSET of the holder's field,
// PEXPIRE) and one that releases it (HDEL, and PUBLISH of Redisson's unlock
// message, which Java's waiters wait for). Nothing else: no latch against
// late copies or repeats, no queue, no renewal, no waiting beyond polling
// every millisecond. A library that keeps Redisson's layout and wakes
// Redisson's waiters sends at least these commands.
func Floor() Peer {
	return Peer{Name: "floor", Connect: func(addr string) (Client, error) {
		c, err := rueidis.NewClient(RueidisOption(addr))
		if err != nil {
			return nil, err
		}
		return floorClient{c: c}, nil
	}}
}

var (
	floorAcquire = rueidis.NewLuaScript(`if redis.call('exists', KEYS[1]) == 0 then
	redis.call('hset', KEYS[1], ARGV[2], 1)
	redis.call('pexpire', KEYS[1], ARGV[1])
	return nil
end
return redis.call('pttl', KEYS[1])`)
	floorRelease = rueidis.NewLuaScript(`if redis.call('hdel', KEYS[1], ARGV[1]) == 1 then
	redis.call('publish', KEYS[2], '0')
	return 1
end
return 0`)
)

type floorClient struct{ c rueidis.Client }

func (c floorClient) NewMutex(name string) Mutex {
	return floorMutex{c: c.c, keys: []string{name, "redisson_lock__channel:{" + name + "}"}}
}

func (c floorClient) Close() { c.c.Close() }

type floorMutex struct {
	c    rueidis.Client
	keys []string
}

func (m floorMutex) Lock(ctx context.Context) (Held, error) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	field := hex.EncodeToString(b[:]) + ":1"
	for {
		err := floorAcquire.Exec(ctx, m.c, m.keys[:1], []string{"30000", field}).Error()
		if rueidis.IsRedisNil(err) {
			return floorHeld{m: m, field: field}, nil
		}
		if err != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

type floorHeld struct {
	m     floorMutex
	field string
}

func (h floorHeld) Unlock(ctx context.Context) error {
	return floorRelease.Exec(ctx, h.m.c, h.m.keys, []string{h.field}).Error()
}
