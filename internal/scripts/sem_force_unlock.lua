-- sem_force_unlock: take every permit of a Semaphore back from its holders
-- and wake the queued requests that fit now. The size and the queue are kept.
--
-- KEYS[1..7] as sem_acquire: holders, leases, size, queue, heartbeats,
--          requests, the wake-up channel
-- ARGV[1]  the publish command: "publish" or "spublish"
--
-- Reply: the ids of the holders whose lease was running (the terms it
-- ended); empty when no permit was held. Holders whose lease had lapsed
-- held nothing and are removed without being named.
local holders, leases, sizeKey, queue, alive, want, channel =
	KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local ended = {}
for _, h in ipairs(redis.call('hkeys', holders)) do
	local ends = redis.call('zscore', leases, h)
	if ends and tonumber(ends) > now then
		ended[#ended + 1] = h
	end
end
redis.call('del', holders, leases)
for _, w in ipairs(redis.call('zrangebyscore', alive, '-inf', now)) do
	redis.call('zrem', queue, w)
	redis.call('zrem', alive, w)
	redis.call('hdel', want, w)
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

-- Every permit is free: wake the requests that fit, in queue order.
local acc, free = 0, tonumber(redis.call('get', sizeKey) or '0')
for _, w in ipairs(redis.call('zrange', queue, 0, -1)) do
	acc = acc + wanted(w)
	if acc > free then
		break
	end
	redis.call(ARGV[1], channel, w)
end
return ended
