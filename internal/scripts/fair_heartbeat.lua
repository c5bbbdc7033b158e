-- fair_heartbeat: prove many queued waiters alive in one call (the renewal
-- scheduler's batch). Serves every queue with heartbeats: FairMutex's and
-- Semaphore's.
--
-- KEYS[2i-1]   the heartbeats of a queue (sorted set: waiter id -> deadline,
--              server ms); all keys of one call share a cluster slot
-- KEYS[2i]     the queue itself (sorted set: waiter id -> arrival)
-- ARGV[2i-1]   the waiter id
-- ARGV[2i]     the heartbeat timeout in milliseconds
--
-- Reply: an array with one integer per waiter: 1 its deadline is now the
-- server time plus the timeout; 0 it is no longer queued (it was reaped, or it
-- left, or its place alone was deleted), or its deadline has passed, so that
-- others may already count it dead. The caller then joins the queue again, at
-- its end.
local now = serverMS()

local renewed = {}
for i = 1, #KEYS / 2 do
	local alive, queue = KEYS[2 * i - 1], KEYS[2 * i]
	local id, ms = ARGV[2 * i - 1], tonumber(ARGV[2 * i])
	local deadline = redis.call('zscore', alive, id)
	if deadline and tonumber(deadline) > now and redis.call('zscore', queue, id) then
		redis.call('zadd', alive, now + ms, id)
		extend(alive, ms)
		extend(queue, ms)
		renewed[i] = 1
	else
		renewed[i] = 0
	end
end
return renewed
