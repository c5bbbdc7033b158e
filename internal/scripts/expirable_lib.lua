-- expirable_lib: Redisson's RPermitExpirableSemaphore as redisync's scripts see
-- it: the free permits, a string integer at the name, and each taken
-- permit's id scored by the end of its lease (ms) in a sorted set beside it.
-- An id is 16 random bytes; the member is those bytes (recent Redisson, and
-- redisync) or their 32 hex digits (older Redisson 3.x).

-- zremAll removes members from the sorted set key and returns how many were
-- there. It sends them in runs: unpack carries a few thousand values at most
-- (Lua's C stack), and a semaphore may have more permits to give back at once.
local function zremAll(key, members)
	local removed = 0
	for i = 1, #members, 1000 do
		removed = removed + redis.call('zrem', key, unpack(members, i, math.min(i + 999, #members)))
	end
	return removed
end

-- reclaim gives back the permits whose lease ended at or before now, as
-- every Redisson call does first (a permit without a lease has a score far
-- in the future), publishing the new count; it returns the free permits, or
-- false when the count is absent.
local function reclaim(free, leases, channel, now, publish)
	local ended = redis.call('zrangebyscore', leases, 0, now)
	if #ended > 0 then
		zremAll(leases, ended)
		local n = redis.call('incrby', free, #ended)
		if n > 0 then
			redis.call(publish, channel, n)
		end
	end
	local n = redis.call('get', free)
	return n and tonumber(n)
end

-- giveBack takes the permits ids out of the leases and adds those that were
-- there to the free count, publishing it as a Java release does; it
-- returns how many were there.
local function giveBack(free, leases, channel, publish, ids)
	if #ids == 0 then
		return 0
	end
	local removed = zremAll(leases, ids)
	if removed > 0 then
		redis.call(publish, channel, redis.call('incrby', free, removed))
	end
	return removed
end

-- recorded returns which of a permit's two members (its id's bytes, its id
-- as text) the leases hold, and the end of its lease; nil when neither.
local function recorded(leases, bytes, text)
	for _, member in ipairs({bytes, text}) do
		local ends = redis.call('zscore', leases, member)
		if ends then
			return member, tonumber(ends)
		end
	end
	return nil
end
