-- sem_acquire: take permits of a Semaphore in queue order, or join (or keep)
-- a place in its queue.
-- (The functions sem_* are sem_lib.lua's, which comes first.)
--
-- KEYS[1]  the holders: a hash of holder id -> "<permits>:<version>"
-- KEYS[2]  the leases: a sorted set of holder ids scored by the server time
--          (ms) at which their permits come back
-- KEYS[3]  the size, recorded on first use (a string, no expiry)
-- KEYS[4]  the queue: a sorted set of waiter ids scored by arrival
-- KEYS[5]  the heartbeats: a sorted set of waiter ids scored by the server
--          time (ms) after which a waiter counts as dead
-- KEYS[6]  the requests: a hash of waiter id -> permits wanted
-- KEYS[7]  the wake-up channel
-- KEYS[8]  the term's latch: the semaphore's latch prefix, ":", ARGV[2]
--          (see sem_release)
-- ARGV[1]  the size of the caller's handle
-- ARGV[2]  the holder id: one per term of a handle (from its first acquire
--          to the release of its last permit), never reused
-- ARGV[3]  the permits requested, n > 0
-- ARGV[4]  the permits the holder has after this acquire (held + n), in
--          decimal: the entry is written from this text
-- ARGV[5]  lease in milliseconds
-- ARGV[6]  the waiter id, chosen once per waiting call, or "" to try without
--          queueing (TryAcquire)
-- ARGV[7]  heartbeat timeout in milliseconds
-- ARGV[8]  the publish command: "publish" or "spublish"
-- ARGV[9]  the version of the holder's entry the caller last saw confirmed,
--          "0" when the term has no entry yet
-- ARGV[10] the version this call writes: greater than every version the
--          holder sent before
--
-- Reply: {1, 0}     acquired: the holder has ARGV[4] permits, leased anew;
--        {-2, size} the recorded size differs from ARGV[1];
--        {-3, 0}    the holder's entry is gone (its lease lapsed): the term
--                   is lost;
--        {-4, 0}    a late copy of an older call (the entry has a version
--                   outside [ARGV[9], ARGV[10]), or the term's latch is
--                   set): nothing changes;
--        {0, wait}  not acquired: wait is how long (ms) the caller may sleep
--                   unless woken: until the earliest holder's lease ends for
--                   the head of the queue, else until the heartbeat deadline
--                   of the waiter just ahead; -1 when unknown. A queued
--                   waiter's reply has a third element: 1 when it joined
--                   the queue now, at its end, 0 when it kept its place.
--
-- FIFO as golang.org/x/sync/semaphore: a request is granted only when it fits
-- together with every request queued ahead of it, so small requests cannot
-- starve a large one. The holder's entry is compare-and-set: a call applies
-- only to a version the holder has seen or sent since (a call of unknown
-- outcome may have moved it), and writes a newer one, so that a call arriving
-- after a later one of the same holder changes nothing; the one that wrote
-- the current version, repeated, is granted again. Queueing a queued id keeps
-- its place. Time is the server's.
--
-- Permits are summed as Lua numbers, doubles, exact for integers up to 2^53:
-- the size and every request are at most 2^53-1 (the Go side refuses more),
-- so a sum is exact, or, past 2^53, rounds to no less than 2^53 and still
-- exceeds the size. Numbers are written from the arguments' text, never
-- with '..' on a number (Lua prints 14 digits: 1.5e14 as "1.5e+14").
local holders, leases, sizeKey, queue, alive, want, channel =
	KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local holder, target, id = ARGV[2], tonumber(ARGV[4]), ARGV[6]
local expect, version = tonumber(ARGV[9]), tonumber(ARGV[10])

local recorded = redis.call('get', sizeKey)
if not recorded then
	redis.call('set', sizeKey, ARGV[1])
elseif recorded ~= ARGV[1] then
	return {-2, tonumber(recorded)}
end
local size = tonumber(ARGV[1])
local now = sem_now()

-- Expired and lease-less holders give their permits back, dead waiters
-- leave the queue: either may let waiters in.
local freed = sem_reap_holders(holders, leases, now)
freed = sem_reap_waiters(queue, alive, want, now) or freed

local function grant()
	redis.call('hset', holders, holder, ARGV[4] .. ':' .. ARGV[10])
	redis.call('zadd', leases, now + tonumber(ARGV[5]), holder)
	sem_extend(holders, ARGV[5])
	sem_extend(leases, ARGV[5])
	if id ~= '' then
		sem_dequeue(queue, alive, want, id)
	end
	return {1, 0}
end

-- The holder's entry: permits and version.
local mine, seen = 0, nil
local entry = redis.call('hget', holders, holder)
if entry then
	local p, v = string.match(entry, '^(%d+):(%d+)$')
	mine, seen = tonumber(p), tonumber(v)
	if seen == version then
		return grant() -- this very call was granted
	end
	if seen == nil or seen < expect or seen > version then
		return {-4, 0}
	end
elseif expect > 0 then
	return {-3, 0}
elseif redis.call('exists', KEYS[8]) == 1 then
	return {-4, 0}
end
local total = sem_taken(holders)
local others = total - mine

local queued = redis.call('zcard', queue)
local rank = false
if id ~= '' then
	rank = redis.call('zrank', queue, id)
end
local fresh = 0
if not rank then
	if queued == 0 and others + target <= size then
		return grant()
	end
	if id == '' then
		return {0, 0}
	end
	local last = redis.call('zrange', queue, -1, -1, 'withscores')
	local seq = 1
	if last[2] then
		seq = tonumber(last[2]) + 1
	end
	redis.call('zadd', queue, seq, id)
	redis.call('hset', want, id, ARGV[3])
	rank = queued
	fresh = 1
else
	local ahead = 0
	if rank > 0 then
		for _, w in ipairs(redis.call('zrange', queue, 0, rank - 1)) do
			ahead = ahead + sem_wanted(queue, alive, want, w)
		end
	end
	if others + target + ahead <= size then
		return grant()
	end
end
local hb = tonumber(ARGV[7])
redis.call('zadd', alive, now + hb, id)
sem_extend(queue, hb)
sem_extend(alive, hb)
sem_extend(want, hb)

if freed then
	-- Reaping gave permits back: wake the waiters that fit now.
	sem_wake(queue, alive, want, size - total, ARGV[8], channel, id)
end

if rank == 0 then
	local earliest = redis.call('zrange', leases, 0, 0, 'withscores')
	if earliest[2] then
		return {0, tonumber(earliest[2]) - now, fresh}
	end
	return {0, -1, fresh}
end
local ahead = redis.call('zrange', queue, rank - 1, rank - 1)[1]
local deadline = redis.call('zscore', alive, ahead)
if not deadline then
	return {0, -1, fresh}
end
return {0, tonumber(deadline) - now, fresh}
