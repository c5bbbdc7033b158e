-- rw_rlock: take or re-enter a read hold of a Redisson-compatible RWMutex.
--
-- KEYS[1]  the lock: a hash with "mode" = "read" | "write", reader fields
--          "<uuid>:<owner>" = hold count, writer field "<uuid>:<owner>:write"
-- KEYS[2]  waiting writers: a sorted set of writer ids scored by the server
--          time (ms) at which each stops counting unless it tries again
-- KEYS[3]  this owner's read timeout key prefix,
--          "{name}:<uuid>:<owner>:rwlock_timeout"; hold i has the key
--          prefix..":"..i with the lease as its expiry (Redisson's layout)
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  the owner's read field
-- ARGV[3]  the owner's write field
-- ARGV[4]  the read hold count the owner has after this acquire
-- ARGV[5]  "1" if the owner may pass waiting writers (an explicit owner
--          re-entering its read lock), "0" otherwise
--
-- Reply: nil when the read hold is taken; -3 when ARGV[4] > 1 but the owner's
--        read hold is gone (lost); otherwise how long to wait in milliseconds
--        (the lock's PTTL, or the time until a waiting writer's claim lapses).
--
-- The count is set, not incremented: a repeat after a lost reply finds its
-- own count and succeeds again without adding a hold.
local n = tonumber(ARGV[4])
local cur = tonumber(redis.call('hget', KEYS[1], ARGV[2]) or '0')
local function hold()
	if redis.call('hget', KEYS[1], 'mode') == false then
		redis.call('hset', KEYS[1], 'mode', 'read')
	end
	redis.call('hset', KEYS[1], ARGV[2], n)
	redis.call('set', KEYS[3] .. ':' .. n, 1, 'px', ARGV[1])
	redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), tonumber(ARGV[1])))
end
if cur >= n then
	hold()
	return nil
end
if n > 1 and cur == 0 then
	return -3
end
local mode = redis.call('hget', KEYS[1], 'mode')
local writer = redis.call('hexists', KEYS[1], ARGV[3]) == 1
if mode == 'write' and not writer then
	return redis.call('pttl', KEYS[1])
end
if not writer and ARGV[5] ~= '1' then
	local now = redis.call('time')
	local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
	redis.call('zremrangebyscore', KEYS[2], '-inf', ms)
	local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
	if first[2] then
		local lapse = tonumber(first[2]) - ms
		local pttl = redis.call('pttl', KEYS[1])
		if pttl > 0 then
			return math.min(pttl, lapse)
		end
		return lapse
	end
end
hold()
return nil
