-- fair_release: leave a reentrant hold of a FairMutex, or release it and wake
-- the head of its queue; optionally take a waiter out of the queue first.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the queue (sorted set of waiter ids by arrival)
-- KEYS[3]  the heartbeats (sorted set of waiter ids by deadline, server ms)
-- KEYS[4]  the wake-up channel
-- KEYS[5]  the hold's latch: the lock's latch prefix, ":", ARGV[1]
-- ARGV[1]  the hold's field
-- ARGV[2]  the hold count before this release
-- ARGV[3]  the hold count after it: 0 releases the lock
-- ARGV[4]  the publish command: "publish" or "spublish"
-- ARGV[5]  the latch's lifetime in milliseconds
-- ARGV[6]  "1" to leave the latch even when the hold is not there (the undo
--          of an acquire of unknown outcome)
-- ARGV[7]  a waiter id to remove from the queue (a waiter giving up), or ""
--
-- Reply: {status, head}: status 1 released by this release (or a repeat of
--        it), 0 still held, -1 the hold is not there; head is the id of the
--        waiter woken (its id published on the channel), or "".
--
-- Idempotent: the count is compare-and-set, removing a waiter twice removes
-- it once, and the final release latches the hold's field so that its repeat
-- answers 1 again and a late copy of the hold's first acquire takes nothing.
-- A waiter that gives up while it is the head of a free lock passes the turn
-- on.
local lock, queue, alive, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local field, id = ARGV[1], ARGV[7]
local latch = KEYS[5]

local wasHead = false
if id ~= '' then
	wasHead = redis.call('zrank', queue, id) == 0
	redis.call('zrem', queue, id)
	redis.call('zrem', alive, id)
end

-- Reap dead waiters and wake the head if the lock is free.
local function wakeHead()
	local now = serverMS()
	for _, dead in ipairs(redis.call('zrangebyscore', alive, '-inf', now)) do
		redis.call('zrem', queue, dead)
		redis.call('zrem', alive, dead)
	end
	if redis.call('exists', lock) == 1 then
		return ''
	end
	local head = redis.call('zrange', queue, 0, 0)[1]
	if not head then
		return ''
	end
	redis.call(ARGV[4], channel, head)
	return head
end

return releaseHold(lock, field, latch, ARGV[2], ARGV[3], ARGV[6], ARGV[5], wakeHead, wasHead or id == '')
