-- rfair_release: leave a reentrant hold of a FairMutex kept in Redisson's
-- RFairLock layout, or release it and wake the head of Redisson's queue;
-- optionally take a waiter out of the queue first.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  Redisson's queue (a list of waiter ids)
-- KEYS[3]  Redisson's eviction times (a sorted set)
-- KEYS[4]  the channel prefix (a waiter's channel is KEYS[4] .. ':' .. id)
-- KEYS[5]  the hold's latch: the lock's latch prefix, ":", ARGV[1]
-- ARGV[1]  the hold's field
-- ARGV[2]  the hold count before this release
-- ARGV[3]  the hold count after it: 0 releases the lock
-- ARGV[4]  the publish command: "publish" or "spublish"
-- ARGV[5]  the latch's lifetime in milliseconds
-- ARGV[6]  "1" to leave the latch even when the hold is not there (the undo
--          of an acquire of unknown outcome)
-- ARGV[7]  a waiter id to take out of the queue (a waiter giving up), or ""
-- ARGV[8]  Redisson's fairLockWaitTimeout in milliseconds
--
-- Reply: {status, head}: status 1 released by this release (or a repeat of
--        it), 0 still held, -1 the hold is not there; head is the id of the
--        waiter woken ("0" published on its channel, as a Java unlock
--        does), or "".
--
-- Idempotent as fair_release is. Stale heads are reaped by Redisson's rule
-- (their eviction time has passed, server time).
local lock, queue, timeouts, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local field, id = ARGV[1], ARGV[7]
local latch = KEYS[5]

local wasHead = false
if id ~= '' then
	wasHead = redis.call('lindex', queue, 0) == id
	leave(queue, timeouts, id, tonumber(ARGV[8]))
end

local function wake()
	return wakeHead(lock, queue, timeouts, channel, ARGV[4], serverMS())
end

return releaseHold(lock, field, latch, ARGV[2], ARGV[3], ARGV[6], ARGV[5], wake, wasHead or id == '')
