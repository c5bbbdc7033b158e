-- rfair_heartbeat: prove queued waiters of FairMutexes kept in Redisson's
-- RFairLock layout alive in one call (the renewal scheduler's batch).
--
-- KEYS[2i-1]   Redisson's eviction times (sorted set: waiter id -> ms);
--              all keys of one call share a cluster slot
-- KEYS[2i]     Redisson's queue (a list of waiter ids)
-- ARGV[3i-2]   the waiter id
-- ARGV[3i-1]   the heartbeat timeout in milliseconds
-- ARGV[3i]     Redisson's fairLockWaitTimeout in milliseconds ("wait")
--
-- Reply: an array with one integer per waiter: 1 its eviction time is now at
-- least the server time plus the timeout plus a wait per waiter ahead of it
-- (a longer one is kept)
-- (see rfair_acquire); 0 it is no longer queued (it was evicted, or it
-- left), or its time has passed, so that a Java attempt may evict it at any
-- moment. The caller then joins the queue again, at its end.
local now = serverMS()

local renewed = {}
for i = 1, #KEYS / 2 do
	local timeouts, queue = KEYS[2 * i - 1], KEYS[2 * i]
	local id, hb, wait = ARGV[3 * i - 2], tonumber(ARGV[3 * i - 1]), tonumber(ARGV[3 * i])
	local evict = tonumber(redis.call('zscore', timeouts, id))
	local pos = evict and evict > now and redis.call('lpos', queue, id)
	if pos then
		redis.call('zadd', timeouts, math.max(evict, now + hb + pos * wait), id)
		renewed[i] = 1
	else
		renewed[i] = 0
	end
end
return renewed
