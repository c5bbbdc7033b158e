-- rw_renew: extend many RWMutex holds in one call (the watchdog's batch).
--
-- KEYS[i]      a lock hash; all keys of one call share a cluster slot
-- ARGV[3i-2]   the holder's field (a reader's "<uuid>:<owner>", or a
--              writer's "<uuid>:<owner>:write")
-- ARGV[3i-1]   the new lease in milliseconds
-- ARGV[3i]     for a reader, its timeout key prefix; "" for a writer
--
-- Reply: an array with one integer per hold: 1 renewed, 0 no longer held.
-- A reader's renewal extends its own timeout keys (one per hold) and never
-- shortens the lock's expiry; it cannot keep another client's crashed
-- readers alive, since their timeout keys are theirs.
local renewed = {}
for i, key in ipairs(KEYS) do
	local field, lease, prefix = ARGV[3 * i - 2], tonumber(ARGV[3 * i - 1]), ARGV[3 * i]
	local count = tonumber(redis.call('hget', key, field) or '0')
	if count > 0 then
		redis.call('pexpire', key, math.max(redis.call('pttl', key), lease))
		if prefix ~= '' then
			for j = 1, count do
				redis.call('pexpire', prefix .. ':' .. j, lease)
			end
		end
		renewed[i] = 1
	else
		renewed[i] = 0
	end
end
return renewed
