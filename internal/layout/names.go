// Package layout is where every primitive's data lives in Redis: its keys and
// Pub/Sub channels, the formats of its hash fields and entries, and their
// parsing. The library, the scripts' Go side and the redisync command all take
// these facts from here, so each is written once (the Lua scripts state them
// again in their headers).
//
// All names of one primitive share the lock key's cluster slot, so a script that
// touches several of them never fails with CROSSSLOT and a sharded publish from
// inside it is local to the node. The rule is Redisson's, which lets a Go service
// and a Java service lock the same names: the lock key is the user's name as it
// is; an auxiliary name is "prefix:{name}" when the name has no hash tag and
// "prefix:name" when it has one.
package layout

import (
	"errors"
	"strings"
)

// Channel and key prefixes of the Redisson-compatible Mutex layout.
const (
	MutexChannelPrefix = "redisson_lock__channel"
	UnlockLatchPrefix  = "redisync_unlock_latch"
	// TokenPrefix names a FencedMutex's token counter, as RFencedLock does.
	TokenPrefix = "redisson_lock_token"
	// MutexQueuePrefix names the queue of redisync's waiters of a Mutex: a
	// sorted set of the hold fields they wait to hold, scored by arrival. A
	// release hands the lock to the first live one and publishes its score
	// (a number, which Redisson's waiters ignore) instead of "0".
	MutexQueuePrefix = "redisync_lock_queue"
	// MutexAlivePrefix names the same waiters' heartbeats: their fields
	// scored by the server time (ms) after which a waiter counts as dead.
	MutexAlivePrefix = "redisync_lock_alive"
	// MutexRunPrefix names the start (server ms) of the current run of
	// releases that handed a Mutex on to a queued waiter: a run is bounded,
	// then the lock goes free once for every waiter, Redisson's too.
	MutexRunPrefix = "redisync_lock_run"
	// RFairQueuePrefix and RFairTimeoutPrefix name what Redisson's RFairLock
	// keeps besides the RLock hash at NAME (which a Mutex shares): its
	// waiters in arrival order, a list of "<uuid>:<threadId>", and each
	// waiter's eviction time, a sorted set scored by the time (ms, the
	// queueing Java client's clock) after which the next acquire attempt
	// removes it from the queue. Each
	// Java waiter listens on MutexChannelPrefix's channel + ":" + its entry.
	RFairQueuePrefix   = "redisson_lock_queue"
	RFairTimeoutPrefix = "redisson_lock_timeout"
	// ExpirableSemTimeoutSuffix names, after Tagged(name) + ":", the permits of
	// Redisson's RPermitExpirableSemaphore: a sorted set of permit ids scored
	// by the time (ms, the acquiring Java client's clock) at which each lease
	// ends (ExpirableSemNoLease for none). Its free permits are a string integer at NAME, and its channel
	// is Aux(CountSemChannelPrefix, name), as an RSemaphore's.
	ExpirableSemTimeoutSuffix = "timeout"
	CountSemChannelPrefix     = "redisson_sc"
	// FencePrefix names the record of a resource guarded by fencing tokens.
	FencePrefix = "redisync_fence"
	// RWChannelPrefix is the channel of an RWMutex, as RReadWriteLock names it.
	RWChannelPrefix = "redisson_rwlock"
	// RWWritersPrefix names an RWMutex's set of waiting writers (our own key).
	RWWritersPrefix = "redisync_rwlock_writers"
)

// The fields of the records whose field names are fixed.
const (
	// FenceValue and FenceToken are a Fence record's fields: the value
	// stored and the token that stored it.
	FenceValue = "value"
	FenceToken = "token"
	// RWMode is the field of an RWMutex's hash that says who holds it:
	// RWRead (readers) or RWWrite (a writer).
	RWMode  = "mode"
	RWRead  = "read"
	RWWrite = "write"
)

// ExpirableSemNoLease is the lease end Redisson records for a permit of an
// RPermitExpirableSemaphore acquired without a lease.
const ExpirableSemNoLease = 922337203685477

// Tagged returns name in the form Redisson prefixes an RWMutex's read timeout
// keys with: "{name}", or name itself when it has a hash tag.
func Tagged(name string) string {
	if strings.Contains(name, "{") {
		return name
	}
	return "{" + name + "}"
}

// Check reports whether name can be used as a lock name. A name must not be
// empty or blank (only white space: a name nobody meant), and every name derived from it must share its cluster slot. A name
// that contains "{" must therefore hold a non-empty hash tag ("a{b" and
// "a{}b" have none), and a name without "{" must not contain "}": "a}b"
// would make the auxiliary names "prefix:{a}b}", tagged "a", which lands in
// another slot than the lock key "a}b".
func Check(name string) error {
	if strings.TrimSpace(name) == "" {
		return errors.New("empty or blank name")
	}
	if strings.Contains(name, "{") && !hasTag(name) {
		return errors.New("name contains '{' but no non-empty hash tag {...}, so its keys cannot share one cluster slot")
	}
	slot := Slot(name)
	if Slot(Aux("p", name)) != slot || Slot(Tagged(name)+":p") != slot {
		return errors.New("name contains '}' without a hash tag {...} before it, so its keys cannot share one cluster slot")
	}
	return nil
}

// Aux returns the auxiliary name with the given prefix for the lock named name.
func Aux(prefix, name string) string {
	if strings.Contains(name, "{") {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}

// hasTag reports whether key contains a non-empty hash tag, by the rule Redis
// Cluster uses: the first "{" and the first "}" after it, with something between.
func hasTag(key string) bool {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return false
	}
	end := strings.IndexByte(key[open+1:], '}')
	return end > 0
}

// Slot returns the Redis Cluster hash slot of key.
func Slot(key string) uint16 {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	return crc16(key) % 16384
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021), the checksum of Redis Cluster's
// key hashing.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// ClientChannelPrefix names the channel on which a redisync Client hears
// that a force unlock elsewhere took holds of its away (see ClientChannel).
const ClientChannelPrefix = "redisync_client"

// ClientChannel returns the channel of the Client whose id is the first part
// of its hold fields ("<id>:<n>"): a force unlock publishes there the fields
// it deleted, one per line, so that the holder learns of its loss at once
// rather than at its next renewal. The id is the channel's hash tag: on a
// cluster, its sharded channel lives in that slot.
func ClientChannel(id string) string { return ClientChannelPrefix + ":{" + id + "}" }

// ClientInfo returns the key where the Client whose id is id keeps its name,
// host and process id (a JSON object) while it runs, with a short expiry it
// renews: a Client that dies leaves no record for long. It shares the
// Client's channel's name and hash tag (keys and channels are apart).
func ClientInfo(id string) string { return ClientChannel(id) }

// ClientOf returns the id of the Client that a hold field belongs to: the
// field's first part, before its first ':'; "" when it has none.
func ClientOf(field string) string {
	id, _, ok := strings.Cut(field, ":")
	if !ok {
		return ""
	}
	return id
}
