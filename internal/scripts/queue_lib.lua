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
