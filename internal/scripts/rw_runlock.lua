-- rw_runlock: leave a read hold; release the lock with the last hold.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the channel (Redisson's redisson_rwlock:{name})
-- KEYS[3]  the prefix of the lock's latch keys: a hold's latch is
--          KEYS[3]..":"..field
-- KEYS[4]  this hold's read timeout key prefix
-- ARGV[1]  the read hold's field
-- ARGV[2]  the read hold count before this release
-- ARGV[3]  the read hold count after it: 0 ends the hold
-- ARGV[4]  the publish command: "publish" or "spublish"
-- ARGV[5]  the latch's lifetime in milliseconds
-- ARGV[6]  "1" to leave the latch even when the hold is not there (the undo
--          of an acquire of unknown outcome)
-- ARGV[7]  the prefix of every holder's timeout keys: "{name}"
--
-- Reply: 1 the hold is gone by this release (or a repeat of it); 0 it is
--        still held; nil it was not there.
--
-- After the hold's end, the lock's expiry becomes the longest remaining read
-- lease (as Redisson computes it), so the holds of crashed readers end with
-- their own leases; with no live hold left the lock is deleted and "1" is
-- published so that every waiter, reader or writer, re-checks at once. The
-- final release latches the field, as mutex_release does.
local cur = redis.call('hget', KEYS[1], ARGV[1])
if not cur then
	if releasedBefore(KEYS[3] .. ':' .. ARGV[1], ARGV[6], ARGV[5]) then
		return 1
	end
	return nil
end
cur = tonumber(cur)
local m = tonumber(ARGV[3])
if m > 0 then
	if cur == tonumber(ARGV[2]) then
		for i = cur, m + 1, -1 do
			redis.call('del', KEYS[4] .. ':' .. i)
		end
		redis.call('hset', KEYS[1], ARGV[1], m)
	end
	return 0
end
for i = cur, 1, -1 do
	redis.call('del', KEYS[4] .. ':' .. i)
end
redis.call('hdel', KEYS[1], ARGV[1])
redis.call('set', KEYS[3] .. ':' .. ARGV[1], '1', 'px', ARGV[5])
local mode = redis.call('hget', KEYS[1], 'mode')
if redis.call('hlen', KEYS[1]) > 1 then
	local longest = -3
	for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
		local count = tonumber(redis.call('hget', KEYS[1], field))
		if count then
			for i = count, 1, -1 do
				longest = math.max(longest, redis.call('pttl', ARGV[7] .. ':' .. field .. ':rwlock_timeout:' .. i))
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
redis.call(ARGV[4], KEYS[2], '1')
return 1
