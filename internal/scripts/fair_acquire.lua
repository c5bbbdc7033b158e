-- fair_acquire: take a FairMutex in queue order, or join (or keep) a place in
-- its queue.
--
-- KEYS[1]  the lock: a hash of one field "<client-uuid>:<n>" = hold count
-- KEYS[2]  the queue: a sorted set of waiter ids scored by arrival (1, 2, ...)
-- KEYS[3]  the heartbeats: a sorted set of the same ids scored by the server
--          time (ms) after which a waiter counts as dead
-- KEYS[4]  the wake-up channel
-- KEYS[5]  the hold's latch: the lock's latch prefix, ":", ARGV[2] (see
--          fair_release)
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  the hold's field: its identity, fresh for each hold
-- ARGV[3]  the hold count before this acquire: 0 for a first acquire
-- ARGV[4]  the waiter id, chosen once per waiting call, or "" to try without
--          queueing (TryLock)
-- ARGV[5]  heartbeat timeout in milliseconds
-- ARGV[6]  the publish command: "publish" or "spublish"
-- ARGV[7]  "own": the hold's field, if there, was written by an earlier
--          attempt of this same call, so it counts as taken; "queue": the
--          owner holds the lock through another call, so only queue (or keep
--          the place) and never take
--
-- Reply: {1, 0}     the hold has ARGV[3] + 1 holds now;
--        {-3, 0}    a re-entry (ARGV[3] > 0) found the hold gone;
--        {-4, 0}    a first acquire found its hold's latch: a late copy of an
--                   acquire its caller undid, which must take nothing;
--        {0, wait}  not acquired: wait is how long (ms) the caller may sleep
--                   unless woken: the lock's PTTL for the head of the queue,
--                   else the time until the heartbeat deadline of the waiter
--                   just ahead (the one whose death would concern it); -1 or
--                   -2 when unknown. A waiter's reply has a third element:
--                   1 when it joined the queue now, at its end (it had no
--                   place), 0 when it kept its place.
--
-- Idempotent: the count is compare-and-set; queueing an id that is queued
-- keeps its place and refreshes its heartbeat. Time is the server's.
local lock, queue, alive, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local field, expect, id = ARGV[2], tonumber(ARGV[3]), ARGV[4]

-- Hold the lock (again: an earlier attempt of this call took it) and leave
-- the queue.
local function adopt()
	redis.call('pexpire', lock, ARGV[1])
	if id ~= '' then
		redis.call('zrem', queue, id)
		redis.call('zrem', alive, id)
	end
	return {1, 0}
end

-- Take the free lock, unless this call was undone (its latch is set).
local function take()
	if redis.call('exists', KEYS[5]) == 1 then
		return {-4, 0}
	end
	redis.call('hset', lock, field, 1)
	return adopt()
end

-- A re-entry does not queue: the owner already holds the lock.
local own = ownHold(lock, field, expect, ARGV[7])
if own == -3 then
	return {-3, 0}
elseif own == 1 then
	return adopt()
end

local now = serverMS()
local before = redis.call('zrange', queue, 0, 0)[1]
for _, dead in ipairs(redis.call('zrangebyscore', alive, '-inf', now)) do
	redis.call('zrem', queue, dead)
	redis.call('zrem', alive, dead)
end
local held = redis.call('exists', lock) == 1
local head = redis.call('zrange', queue, 0, 0)[1]
if ARGV[7] == 'own' and not held and (head == nil or head == id) then
	return take()
end
if not held and head ~= nil and head ~= before and head ~= id then
	-- Reaping a dead head made a waiter the head of a free lock: tell it.
	redis.call(ARGV[6], channel, head)
end
if id == '' then
	return {0, redis.call('pttl', lock)}
end

local rank = redis.call('zrank', queue, id)
local fresh = 0
if not rank then
	fresh = 1
	local last = redis.call('zrange', queue, -1, -1, 'withscores')
	local seq = 1
	if last[2] then
		seq = tonumber(last[2]) + 1
	end
	redis.call('zadd', queue, seq, id)
	rank = redis.call('zcard', queue) - 1
end
local hb = tonumber(ARGV[5])
redis.call('zadd', alive, now + hb, id)
extend(queue, hb)
extend(alive, hb)
if rank == 0 then
	return {0, redis.call('pttl', lock), fresh}
end
local ahead = redis.call('zrange', queue, rank - 1, rank - 1)[1]
local deadline = redis.call('zscore', alive, ahead)
if not deadline then
	return {0, -1, fresh}
end
return {0, tonumber(deadline) - now, fresh}
