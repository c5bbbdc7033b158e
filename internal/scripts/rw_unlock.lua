-- rw_unlock: leave a write hold; release the write lock with the last hold.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the channel (Redisson's redisson_rwlock:{name})
-- KEYS[3]  the hold's latch: the lock's latch prefix, ":", ARGV[1]
-- ARGV[1]  the write hold's field
-- ARGV[2]  the write hold count before this release
-- ARGV[3]  the write hold count after it: 0 releases the write lock
-- ARGV[4]  the publish command: "publish" or "spublish"
-- ARGV[5]  the latch's lifetime in milliseconds
-- ARGV[6]  "1" to leave the latch even when the hold is not there (the undo
--          of an acquire of unknown outcome)
--
-- Reply: 1 the write lock is released by this release (or a repeat of it);
--        0 still held; nil the hold was not there.
--
-- "1" is published (Redisson's "wake every reader") both when the lock is
-- deleted and when the writer's own read holds remain (a downgrade: the lock
-- becomes a read lock that other readers may join). The final release
-- latches the field, as mutex_release does.
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
	if releasedBefore(KEYS[3], ARGV[6], ARGV[5]) then
		return 1
	end
	return nil
end
if tonumber(ARGV[3]) > 0 then
	if redis.call('hget', KEYS[1], ARGV[1]) == ARGV[2] then
		redis.call('hset', KEYS[1], ARGV[1], ARGV[3])
	end
	return 0
end
redis.call('hdel', KEYS[1], ARGV[1])
if redis.call('hlen', KEYS[1]) <= 1 then
	redis.call('del', KEYS[1])
else
	redis.call('hset', KEYS[1], 'mode', 'read')
end
redis.call(ARGV[4], KEYS[2], '1')
redis.call('set', KEYS[3], '1', 'px', ARGV[5])
return 1
