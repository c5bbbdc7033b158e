-- rw_renew: extend many RWMutex holds in one call (the watchdog's batch).
--
-- KEYS[i]      a lock hash; all keys of one call share a cluster slot
-- ARGV[3i-2]   the hold's field (a reader's "<uuid>:<n>", or a writer's
--              "<uuid>:<n>:write")
-- ARGV[3i-1]   the new lease in milliseconds; 0 for a reader's fixed lease,
--              whose timeout keys keep their expiry
-- ARGV[3i]     for a reader, its timeout key prefix; "" for a writer
--
-- Reply: an array with one integer per hold: 1 renewed, 0 no longer held. A
-- reader is held only while its field and every one of its timeout keys are
-- there: a timeout key that expired (or was deleted) may already have let a
-- writer in, so it is a loss, reported, never revived. A renewal never
-- shortens the lock's expiry, and cannot keep another client's crashed
-- readers alive, since their timeout keys are theirs. It raises the lock's
-- expiry to the hold's lease (a fixed lease: to the longest of its timeout
-- keys), which a Redisson reader's watchdog may have shortened to its own.
local renewed = {}
for i, key in ipairs(KEYS) do
	local field, lease, prefix = ARGV[3 * i - 2], tonumber(ARGV[3 * i - 1]), ARGV[3 * i]
	local count = tonumber(redis.call('hget', key, field) or '0')
	local held = count > 0
	if held and prefix ~= '' then
		for j = 1, count do
			if redis.call('exists', prefix .. ':' .. j) == 0 then
				held = false
			end
		end
		for j = 1, count do
			if held and lease > 0 then
				redis.call('pexpire', prefix .. ':' .. j, lease)
			elseif held then
				lease = math.max(lease, redis.call('pttl', prefix .. ':' .. j))
			end
		end
	end
	if held and lease > 0 then
		redis.call('pexpire', key, math.max(redis.call('pttl', key), lease))
	end
	if held then
		renewed[i] = 1
	else
		renewed[i] = 0
	end
end
return renewed
