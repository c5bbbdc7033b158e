-- countsem_acquire: take permits from a CountingSemaphore, in Redisson's
-- RSemaphore layout (a string integer of free permits at the name).
--
-- KEYS[1]  the free permits; absent until the first use sets them
-- KEYS[2]  the channel (redisson_sc:{name}), on which a count is published
-- KEYS[3]  this call's latch: "1" once it took its permits, "0" once it gave
--          up (countsem_undo); the same key for every attempt of one call
-- ARGV[1]  the permits to take, a positive integer up to 2^53-1: compared
--          with the count as a Lua number (a double), which is exact up to
--          there (a count above 2^53 rounds, but not below 2^53)
-- ARGV[2]  the free permits to start from when KEYS[1] is absent (the
--          handle's size: what Redisson's trySetPermits does)
-- ARGV[3]  how long the latch lasts, in milliseconds
-- ARGV[4]  the publish command: "publish", or "spublish" on Redis Cluster
--
-- Reply: {1, free after} taken (now, or by an earlier attempt of this call,
-- whose reply was lost); {0, free} not enough free (nothing changed); {-4, 0}
-- the call gave up (a late copy of one of its attempts: nothing taken).
--
-- Java clients take permits without latches; the latch only makes this
-- call's repeats and late copies harmless.
local latch = redis.call('get', KEYS[3])
if latch == '0' then
	return {-4, 0}
end
local free = redis.call('get', KEYS[1])
if latch == '1' then
	return {1, tonumber(free) or 0}
end
local set = false
if free == false then
	free, set = ARGV[2], true
	redis.call('set', KEYS[1], free)
end
free = tonumber(free)
if free == nil then
	return redis.error_reply('the free permits at ' .. KEYS[1] .. ' are not an integer')
end
local n = tonumber(ARGV[1])
if free < n then
	if set and free > 0 then
		redis.call(ARGV[4], KEYS[2], free) -- Java waiters on an unset count
	end
	return {0, free}
end
free = redis.call('decrby', KEYS[1], n)
redis.call('set', KEYS[3], '1', 'px', ARGV[3])
if set and free > 0 then
	redis.call(ARGV[4], KEYS[2], free)
end
return {1, free}
