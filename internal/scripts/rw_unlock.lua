-- rw_unlock: leave a write hold; release the write lock with the last hold.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the channel (Redisson's redisson_rwlock:{name})
-- KEYS[3]  this release's latch, named by its request id
-- ARGV[1]  the owner's write field
-- ARGV[2]  the write hold count to leave
-- ARGV[3]  the publish command: "publish" or "spublish"
-- ARGV[4]  latch lifetime in milliseconds
--
-- Reply: 1 the write lock is released; 0 still held with ARGV[2] holds; nil
--        the owner held no write lock.
--
-- "1" is published (Redisson's "wake every reader") both when the lock is
-- deleted and when the writer's own read holds remain (a downgrade: the lock
-- becomes a read lock that other readers may join).
local m = tonumber(ARGV[2])
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
	if redis.call('exists', KEYS[3]) == 1 then
		return 1
	end
	return nil
end
if m > 0 then
	redis.call('hset', KEYS[1], ARGV[1], m)
	return 0
end
redis.call('hdel', KEYS[1], ARGV[1])
if redis.call('hlen', KEYS[1]) <= 1 then
	redis.call('del', KEYS[1])
else
	redis.call('hset', KEYS[1], 'mode', 'read')
end
redis.call(ARGV[3], KEYS[2], '1')
redis.call('set', KEYS[3], '1', 'px', ARGV[4])
return 1
