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
func Floor() Peer { return floorPeer("floor", false) }

// FloorPlain is Floor with a release that runs no script: HDEL of the
// holder's field and PUBLISH, pipelined. It is no safe release for a
// reentrant lock (a re-entered hold would go at once) nor for one whose
// release must do anything atomically with it (a repeat's answer, a
// handover to a queued waiter): the least a release in Redisson's layout
// can cost at all.
func FloorPlain() Peer { return floorPeer("floor-plain", true) }

func floorPeer(name string, plain bool) Peer {
	return Peer{Name: name, Connect: func(addr string) (Client, error) {
		c, err := rueidis.NewClient(RueidisOption(addr))
		if err != nil {
			return nil, err
		}
		return floorClient{c: c, plain: plain}, nil
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

type floorClient struct {
	c     rueidis.Client
	plain bool
}

func (c floorClient) NewMutex(name string) Mutex {
	return floorMutex{c: c.c, plain: c.plain, keys: []string{name, "redisson_lock__channel:{" + name + "}"}}
}

func (c floorClient) Close() { c.c.Close() }

type floorMutex struct {
	c     rueidis.Client
	plain bool
	keys  []string
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
	c := h.m.c
	if !h.m.plain {
		return floorRelease.Exec(ctx, c, h.m.keys, []string{h.field}).Error()
	}
	for _, r := range c.DoMulti(ctx, c.B().Hdel().Key(h.m.keys[0]).Field(h.field).Build(),
		c.B().Publish().Channel(h.m.keys[1]).Message("0").Build()) {
		if err := r.Error(); err != nil {
			return err
		}
	}
	return nil
}
