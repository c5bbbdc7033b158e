-- mutex_wait: a waiting first acquire of a Mutex by redisync: take the lock,
-- or join (or keep) the call's place in the queue of waiters to which a
-- release hands the lock (see mutex_release).
--
-- KEYS[1]  the lock: a hash of one field "<client-uuid>:<n>" = hold count
-- KEYS[2]  the call's latch: the lock's latch prefix, ":", ARGV[2] (see
--          mutex_release)
-- KEYS[3]  the queue: a sorted set of the waiting calls' hold fields, scored
--          by their place numbers (arrival order)
-- KEYS[4]  the heartbeats: a sorted set of the same fields scored by the
--          server time (ms) after which a waiter counts as dead
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  the hold's field: the call's identity, fresh for each call, and
--          its id in the queue
-- ARGV[3]  heartbeat timeout in milliseconds
--
-- Reply: {1, 0}        the call holds the lock (count 1): it was free, or the
--                      field was there (an earlier attempt of this call took
--                      it, or a release handed it to the call); the call's
--                      place, if any, is gone;
--        {-4, 0}       the field's latch is there: a late copy of an attempt
--                      of a call that gave up, which must neither take nor
--                      queue;
--        {0, pttl, n}  the lock is taken (pttl its PTTL, -1 without expiry);
--                      the call keeps place n, with a fresh heartbeat; a
--                      release that hands the call the lock publishes n.
--
-- A place is numbered by the server's TIME in microseconds, above the last
-- place of the queue, so that no number names two waiters of one lock: a
-- message handing the lock to an old place is never taken for a new one.
local lock, queue, alive, field = KEYS[1], KEYS[3], KEYS[4], ARGV[2]

-- Hold the lock and leave the queue.
local function hold()
	redis.call('pexpire', lock, ARGV[1])
	redis.call('zrem', queue, field)
	redis.call('zrem', alive, field)
	return {1, 0}
end

if redis.call('hexists', lock, field) == 1 then
	return hold()
end
if redis.call('exists', KEYS[2]) == 1 then
	return {-4, 0}
end
if redis.call('exists', lock) == 0 then
	redis.call('hset', lock, field, 1)
	return hold()
end

local n = redis.call('zscore', queue, field)
if not n then
	local time = redis.call('time')
	n = tonumber(time[1]) * 1000000 + tonumber(time[2])
	local last = redis.call('zrange', queue, -1, -1, 'withscores')[2]
	if last and tonumber(last) >= n then
		n = tonumber(last) + 1
	end
	redis.call('zadd', queue, n, field)
end
local hb = tonumber(ARGV[3])
redis.call('zadd', alive, serverMS() + hb, field)
extend(queue, hb)
extend(alive, hb)
return {0, redis.call('pttl', lock), tonumber(n)}
