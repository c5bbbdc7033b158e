-- rfair_acquire: take a FairMutex kept in Redisson's RFairLock layout in
-- queue order, or join (or keep) a place in Redisson's queue, beside Java
-- waiters.
--
-- KEYS[1]  the lock: the RLock hash at the name, one field per hold
-- KEYS[2]  Redisson's queue: a list of waiter ids
-- KEYS[3]  Redisson's eviction times: a sorted set of the same ids
-- KEYS[4]  the channel prefix: a waiter listens on KEYS[4] .. ':' .. its id
-- KEYS[5]  the hold's latch: the lock's latch prefix, ":", ARGV[2] (see
--          rfair_release)
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  the hold's field: its identity, fresh for each hold
-- ARGV[3]  the hold count before this acquire: 0 for a first acquire
-- ARGV[4]  the waiter id, chosen once per waiting call, or "" to try without
--          queueing (TryLock)
-- ARGV[5]  heartbeat timeout in milliseconds
-- ARGV[6]  Redisson's fairLockWaitTimeout in milliseconds ("wait")
-- ARGV[7]  "own": the hold's field, if there, was written by an earlier
--          attempt of this same call, so it counts as taken; "queue": the
--          owner holds the lock through another call, so only queue (or keep
--          the place) and never take
-- ARGV[8]  the publish command: "publish" or "spublish"
--
-- Reply: {1, 0}     the hold has ARGV[3] + 1 holds now;
--        {-3, 0}    a re-entry (ARGV[3] > 0) found the hold gone;
--        {-4, 0}    a first acquire found its hold's latch: a late copy of an
--                   acquire its caller undid, which must take nothing;
--        {0, wait}  not acquired: how long (ms) the caller may sleep unless
--                   woken: the lock's PTTL for the head of the queue, else
--                   the time until the waiter just ahead may be evicted; -1
--                   or -2 when unknown; a waiter's reply has a third
--                   element, 1 when it joined the queue now (at its end), 0
--                   when it kept its place.
--
-- A Go waiter's eviction time is Redisson's prediction, raised to at least
-- the server time plus its heartbeat timeout plus one wait per waiter ahead
-- of it (each of their acquisitions lowers it by a wait): while its
-- heartbeats come, no script, Redisson's included, evicts it; once they stop
-- it is evicted when that time passes, as a Java waiter is.
-- Idempotent: the count is compare-and-set; queueing an id that is queued
-- keeps its place. Time is the server's (a Java client's is its own clock).
local lock, queue, timeouts, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local field, expect, id = ARGV[2], tonumber(ARGV[3]), ARGV[4]
local hb, wait = tonumber(ARGV[5]), tonumber(ARGV[6])

-- Hold the lock (again: an earlier attempt of this call took it) and leave
-- the queue.
local function adopt()
	redis.call('pexpire', lock, ARGV[1])
	if id ~= '' then
		leave(queue, timeouts, id, wait)
	end
	return {1, 0}
end

-- Take the free lock as Redisson does (the head, or anyone when nobody
-- waits), unless this call was undone (its latch is set).
local function take()
	if redis.call('exists', KEYS[5]) == 1 then
		return {-4, 0}
	end
	if id ~= '' then
		redis.call('lrem', queue, 1, id)
		redis.call('zrem', timeouts, id)
	end
	lower(timeouts, redis.call('zrange', timeouts, 0, -1), wait)
	redis.call('hset', lock, field, 1)
	redis.call('pexpire', lock, ARGV[1])
	return {1, 0}
end

-- A re-entry does not queue: the owner already holds the lock.
local own = ownHold(lock, field, expect, ARGV[7])
if own == -3 then
	return {-3, 0}
elseif own == 1 then
	return adopt()
end

local now = serverMS()
local before = redis.call('lindex', queue, 0)
reapStale(queue, timeouts, now)
local held = redis.call('exists', lock) == 1
local head = redis.call('lindex', queue, 0)
if ARGV[7] == 'own' and not held and (not head or head == id) then
	return take()
end
if not held and head and head ~= before and head ~= id then
	-- Reaping a stale head made a waiter the head of a free lock: tell it.
	redis.call(ARGV[8], channel .. ':' .. head, '0')
end
if id == '' then
	return {0, redis.call('pttl', lock)}
end

local pos = redis.call('lpos', queue, id)
local evict = tonumber(redis.call('zscore', timeouts, id))
local fresh = 0
if not pos then
	fresh = 1
	-- Join at the end, with Redisson's predicted time: the last waiter's
	-- time, or the lock's expiry, plus a wait.
	local last = redis.call('lindex', queue, -1)
	local base = last and tonumber(redis.call('zscore', timeouts, last))
	if not base then
		base = now + math.max(redis.call('pttl', lock), 0)
	end
	evict = base + wait
	pos = redis.call('rpush', queue, id) - 1
end
redis.call('zadd', timeouts, math.max(evict or 0, now + hb + pos * wait), id)
if pos == 0 then
	return {0, redis.call('pttl', lock), fresh}
end
local ahead = tonumber(redis.call('zscore', timeouts, redis.call('lindex', queue, pos - 1)))
if not ahead then
	return {0, -1, fresh}
end
return {0, ahead - now, fresh}
