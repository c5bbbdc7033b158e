-- sem_renew: extend many Semaphore holders' leases in one call (the
-- watchdog's batch).
-- (The functions sem_* are sem_lib.lua's, which comes first.)
--
-- KEYS[2i-1]   the leases of a semaphore (sorted set: holder id -> end, server
--              ms); all keys of one call share a cluster slot
-- KEYS[2i]     its holders (hash: holder id -> "<permits>:<version>")
-- ARGV[3i-2]   the holder id
-- ARGV[3i-1]   the new lease in milliseconds
-- ARGV[3i]     the entry the holder expects: "<permits>:<version>"
--
-- Reply: an array with one integer per holder: 1 renewed; 0 its permits are
-- gone (reaped) or its lease has ended, so that others may have taken them:
-- a loss; 2 renewed, but the entry differs from ARGV[3i]: a loss unless the
-- holder's own call in flight changed it (the scheduler knows). A stale
-- renewal never brings ended permits back.
local now = sem_now()
local renewed = {}
for i = 1, #KEYS / 2 do
	local leases, holders = KEYS[2 * i - 1], KEYS[2 * i]
	local holder, ms = ARGV[3 * i - 2], tonumber(ARGV[3 * i - 1])
	local ends = redis.call('zscore', leases, holder)
	local entry = redis.call('hget', holders, holder)
	if ends and tonumber(ends) > now and entry then
		redis.call('zadd', leases, now + ms, holder)
		sem_extend(leases, ms)
		sem_extend(holders, ms)
		if entry == ARGV[3 * i] then
			renewed[i] = 1
		else
			renewed[i] = 2
		end
	else
		renewed[i] = 0
	end
end
return renewed
