-- fair_force_unlock: delete a FairMutex whoever holds it and wake the head of
-- its queue. The queue itself is kept: its waiters keep their turns.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the queue (sorted set of waiter ids by arrival)
-- KEYS[3]  the heartbeats (sorted set of waiter ids by deadline, server ms)
-- KEYS[4]  the wake-up channel
-- ARGV[1]  the publish command: "publish" or "spublish"
--
-- Reply: the fields of the hash deleted (the holds it ended); empty when
-- there was no lock.
local fields = redis.call('hkeys', KEYS[1])
if redis.call('del', KEYS[1]) == 0 then
	return fields
end
local now = serverMS()
for _, dead in ipairs(redis.call('zrangebyscore', KEYS[3], '-inf', now)) do
	redis.call('zrem', KEYS[2], dead)
	redis.call('zrem', KEYS[3], dead)
end
local head = redis.call('zrange', KEYS[2], 0, 0)[1]
if head then
	redis.call(ARGV[1], KEYS[4], head)
end
return fields
