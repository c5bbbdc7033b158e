-- sem_renew: extend many Semaphore holders' leases in one call (the
-- watchdog's batch).
--
-- KEYS[2i-1]   the leases of a semaphore (sorted set: holder id -> end, server
--              ms); all keys of one call share a cluster slot
-- KEYS[2i]     its holders (hash: holder id -> permits)
-- ARGV[2i-1]   the holder id
-- ARGV[2i]     the new lease in milliseconds
--
-- Reply: an array with one integer per holder: 1 renewed; 0 its permits are
-- gone (reaped) or its lease has ended, so that others may have taken them:
-- a loss. A stale renewal never brings ended permits back.
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local function extend(key, ms)
	local ttl = redis.call('pttl', key)
	if ttl == -1 or (ttl >= 0 and ttl < ms) then
		redis.call('pexpire', key, ms)
	end
end

local renewed = {}
for i = 1, #KEYS / 2 do
	local leases, holders = KEYS[2 * i - 1], KEYS[2 * i]
	local holder, ms = ARGV[2 * i - 1], tonumber(ARGV[2 * i])
	local ends = redis.call('zscore', leases, holder)
	if ends and tonumber(ends) > now and redis.call('hexists', holders, holder) == 1 then
		redis.call('zadd', leases, now + ms, holder)
		extend(leases, ms)
		extend(holders, ms)
		renewed[i] = 1
	else
		renewed[i] = 0
	end
end
return renewed
