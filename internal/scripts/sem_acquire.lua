-- sem_acquire: take permits of a Semaphore in queue order, or join (or keep)
-- a place in its queue.
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
-- KEYS[8]  the prefix of the semaphore's latch keys (see sem_release)
-- ARGV[1]  the size of the caller's handle
-- ARGV[2]  the holder id: one per term of a handle (from its first acquire
--          to the release of its last permit), never reused
-- ARGV[3]  the permits requested, n > 0
-- ARGV[4]  the permits the holder has after this acquire (held + n)
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
--                   of the waiter just ahead; -1 when unknown.
--
-- FIFO as golang.org/x/sync/semaphore: a request is granted only when it fits
-- together with every request queued ahead of it, so small requests cannot
-- starve a large one. The holder's entry is compare-and-set: a call applies
-- only to a version the holder has seen or sent since (a call of unknown
-- outcome may have moved it), and writes a newer one, so that a call arriving
-- after a later one of the same holder changes nothing; the one that wrote
-- the current version, repeated, is granted again. Queueing a queued id keeps
-- its place. Time is the server's.
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
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local function extend(key, ms)
	local ttl = redis.call('pttl', key)
	if ttl == -1 or (ttl >= 0 and ttl < tonumber(ms)) then
		redis.call('pexpire', key, ms)
	end
end

-- Expired holders give their permits back, and so do holders without a
-- lease (their lease entry was deleted by someone else: nothing would ever
-- expire them); dead waiters leave the queue.
local freed = false
for _, h in ipairs(redis.call('zrangebyscore', leases, '-inf', now)) do
	redis.call('hdel', holders, h)
	redis.call('zrem', leases, h)
	freed = true
end
for _, h in ipairs(redis.call('hkeys', holders)) do
	if not redis.call('zscore', leases, h) then
		redis.call('hdel', holders, h)
		freed = true
	end
end
for _, w in ipairs(redis.call('zrangebyscore', alive, '-inf', now)) do
	redis.call('zrem', queue, w)
	redis.call('zrem', alive, w)
	redis.call('hdel', want, w)
	freed = true
end

-- wanted returns the permits that waiter w asks for. A request that is not a
-- number (written by someone else) would stall the queue for good: its waiter
-- is dropped as if dead, and a live one queues again.
local function wanted(w)
	local n = tonumber(redis.call('hget', want, w) or '0')
	if n == nil then
		redis.call('zrem', queue, w)
		redis.call('zrem', alive, w)
		redis.call('hdel', want, w)
		return 0
	end
	return n
end

local function grant()
	redis.call('hset', holders, holder, target .. ':' .. version)
	redis.call('zadd', leases, now + tonumber(ARGV[5]), holder)
	extend(holders, ARGV[5])
	extend(leases, ARGV[5])
	if id ~= '' then
		redis.call('zrem', queue, id)
		redis.call('zrem', alive, id)
		redis.call('hdel', want, id)
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
elseif redis.call('exists', KEYS[8] .. ':' .. holder) == 1 then
	return {-4, 0}
end
local total = 0
for _, v in ipairs(redis.call('hvals', holders)) do
	total = total + tonumber(string.match(v, '^%d+') or '0')
end
local others = total - mine

local queued = redis.call('zcard', queue)
local rank = false
if id ~= '' then
	rank = redis.call('zrank', queue, id)
end
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
else
	local ahead = 0
	if rank > 0 then
		for _, w in ipairs(redis.call('zrange', queue, 0, rank - 1)) do
			ahead = ahead + wanted(w)
		end
	end
	if others + target + ahead <= size then
		return grant()
	end
end
local hb = tonumber(ARGV[7])
redis.call('zadd', alive, now + hb, id)
extend(queue, hb)
extend(alive, hb)
extend(want, hb)

if freed then
	-- Reaping gave permits back: wake the waiters that fit now.
	local acc, free = 0, size - total
	for _, w in ipairs(redis.call('zrange', queue, 0, -1)) do
		acc = acc + wanted(w)
		if acc > free then
			break
		end
		if w ~= id then
			redis.call(ARGV[8], channel, w)
		end
	end
end

if rank == 0 then
	local earliest = redis.call('zrange', leases, 0, 0, 'withscores')
	if earliest[2] then
		return {0, tonumber(earliest[2]) - now}
	end
	return {0, -1}
end
local ahead = redis.call('zrange', queue, rank - 1, rank - 1)[1]
local deadline = redis.call('zscore', alive, ahead)
if not deadline then
	return {0, -1}
end
return {0, tonumber(deadline) - now}
