-- rw_runlock: leave a read hold; release the lock with the last hold.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the channel (Redisson's redisson_rwlock:{name})
-- KEYS[3]  this release's latch, named by its request id
-- KEYS[4]  this owner's read timeout key prefix
-- ARGV[1]  the owner's read field
-- ARGV[2]  the read hold count to leave
-- ARGV[3]  the publish command: "publish" or "spublish"
-- ARGV[4]  latch lifetime in milliseconds
-- ARGV[5]  the prefix of every holder's timeout keys: "{name}"
--
-- Reply: 1 the owner's last read hold is gone; 0 the owner still holds
--        ARGV[2] read holds; nil the owner held no read lock.
--
-- After the owner's last hold, the lock's expiry becomes the longest
-- remaining read lease (as Redisson computes it), so the holds of crashed
-- readers end with their own leases; with no live hold left the lock is
-- deleted and "1" is published so that every waiter, reader or writer,
-- re-checks at once.
local m = tonumber(ARGV[2])
local cur = tonumber(redis.call('hget', KEYS[1], ARGV[1]) or '0')
if cur == 0 then
	if redis.call('exists', KEYS[3]) == 1 then
		return 1
	end
	return nil
end
for i = cur, m + 1, -1 do
	redis.call('del', KEYS[4] .. ':' .. i)
end
if m > 0 then
	redis.call('hset', KEYS[1], ARGV[1], m)
	return 0
end
redis.call('hdel', KEYS[1], ARGV[1])
redis.call('set', KEYS[3], '1', 'px', ARGV[4])
local mode = redis.call('hget', KEYS[1], 'mode')
if redis.call('hlen', KEYS[1]) > 1 then
	local longest = -3
	for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
		local count = tonumber(redis.call('hget', KEYS[1], field))
		if count then
			for i = count, 1, -1 do
				longest = math.max(longest, redis.call('pttl', ARGV[5] .. ':' .. field .. ':rwlock_timeout:' .. i))
			end
		end
	end
	if mode == 'write' then
		return 1 -- a writer that took reads (downgrade) keeps its lease
	end
	if longest > 0 then
		redis.call('pexpire', KEYS[1], longest)
		return 1
	end
end
redis.call('del', KEYS[1])
redis.call(ARGV[3], KEYS[2], '1')
return 1
