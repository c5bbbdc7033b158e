-- queue_lib: what the scripts of the queues with heartbeats (FairMutex's,
-- a Mutex's waiting calls, and the batch heartbeat) share.

-- serverMS returns the server's time in milliseconds.
local function serverMS()
	local time = redis.call('time')
	return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

-- extend keeps a queue key at least ms alive, so that the entries of crashed
-- waiters cannot outlive it when nobody comes back to reap them.
local function extend(key, ms)
	local ttl = redis.call('pttl', key)
	if ttl == -1 or (ttl >= 0 and ttl < ms) then
		redis.call('pexpire', key, ms)
	end
end

-- ownHold answers for a FairMutex acquire that its owner's hold may already
-- satisfy: 1 the hold is there, to be adopted (a re-entry expecting expect
-- holds added one, compare-and-set, or, with mode "own", an earlier attempt
-- of this call took it); -3 a re-entry found the hold gone; 0 neither.
local function ownHold(lock, field, expect, mode)
	if expect > 0 then
		local cur = redis.call('hget', lock, field)
		if not cur then
			return -3
		end
		if tonumber(cur) == expect then
			redis.call('hset', lock, field, expect + 1)
		end
		return 1
	end
	if mode == 'own' and redis.call('hexists', lock, field) == 1 then
		return 1
	end
	return 0
end
