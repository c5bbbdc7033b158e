-- mutex_renew: extend many Mutex leases in one call (the watchdog's batch).
--
-- KEYS[i]      a lock hash; all keys of one call share a cluster slot
-- ARGV[2i-1]   the field of the owner whose hold KEYS[i] is
-- ARGV[2i]     the new lease of KEYS[i] in milliseconds
--
-- Reply: an array with one integer per key: 1 renewed, 0 the owner no longer
-- holds it (expired, deleted or taken), which the caller reports as a loss.
-- The owner check matters: a stale renewal must never extend another's lock.
local renewed = {}
for i, key in ipairs(KEYS) do
	if redis.call('hexists', key, ARGV[2 * i - 1]) == 1 then
		redis.call('pexpire', key, ARGV[2 * i])
		renewed[i] = 1
	else
		renewed[i] = 0
	end
end
return renewed
