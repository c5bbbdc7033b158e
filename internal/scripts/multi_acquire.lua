-- multi_acquire: take several Redisson-compatible locks as one hold, all of
-- them or none.
--
-- KEYS[2i-1]  the i-th lock: a hash of one field "<client-uuid>:<n>" = hold
--             count, as mutex_acquire takes it
-- KEYS[2i]    the hold's latch in the i-th lock: its latch prefix, ":",
--             ARGV[2] (see mutex_release)
-- ARGV[1]     lease in milliseconds
-- ARGV[2]     the hold's field: its identity, fresh for each hold, the same
--             in every lock
--
-- Reply: {1, 0, 0} when the hold has every lock now (or had them: an earlier
--        attempt of this same call took them);
--        {0, pttl, i} when lock i is taken by someone else (its PTTL, -1: no
--        expiry): nothing was taken;
--        {-4, 0, i} when lock i has the hold's latch: the call that sent
--        this gave up and released what it might have taken, and this is a
--        late copy, so it takes nothing.
--
-- Each lock is held as a Mutex's (count 1), so a Mutex, or a Redisson RLock,
-- on any one of the names excludes the hold, and the hold excludes them.
local n = #KEYS / 2
for i = 1, n do
	local lock = KEYS[2 * i - 1]
	if redis.call('hexists', lock, ARGV[2]) == 0 then
		if redis.call('exists', lock) == 1 then
			return {0, redis.call('pttl', lock), i}
		end
		if redis.call('exists', KEYS[2 * i]) == 1 then
			return {-4, 0, i}
		end
	end
end
for i = 1, n do
	local lock = KEYS[2 * i - 1]
	if redis.call('hexists', lock, ARGV[2]) == 0 then
		redis.call('hset', lock, ARGV[2], 1)
	end
	redis.call('pexpire', lock, ARGV[1])
end
return {1, 0, 0}
