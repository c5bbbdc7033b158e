-- sem_force_unlock: take every permit of a Semaphore back from its holders
-- and wake the queued requests that fit now. The size and the queue are kept.
-- (The functions sem_* are sem_lib.lua's, which comes first.)
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
local now = sem_now()
local ended = {}
for _, h in ipairs(redis.call('hkeys', holders)) do
	local ends = redis.call('zscore', leases, h)
	if ends and tonumber(ends) > now then
		ended[#ended + 1] = h
	end
end
redis.call('del', holders, leases)
sem_reap_waiters(queue, alive, want, now)
-- Every permit is free: wake the requests that fit, in queue order.
sem_wake(queue, alive, want, tonumber(redis.call('get', sizeKey) or '0'), ARGV[1], channel, '')
return ended
