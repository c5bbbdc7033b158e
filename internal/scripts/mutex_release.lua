-- mutex_release: leave a reentrant hold, or release the lock and wake waiters.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the unlock channel (Redisson's redisson_lock__channel:{name})
-- KEYS[3]  this release's latch, named by its request id
-- ARGV[1]  the owner's field
-- ARGV[2]  the hold count to leave (0 releases the lock)
-- ARGV[3]  the publish command: "publish", or "spublish" on Redis Cluster
-- ARGV[4]  latch lifetime in milliseconds
--
-- Reply: 1 released (key deleted, "0" published: Redisson's unlock message);
--        0 still held with ARGV[2] holds; nil the owner does not hold the lock.
--
-- A release is retried after a lost reply with the same request id. Setting
-- the count is idempotent by itself; the final release leaves a short-lived
-- latch so that its retry answers 1 as the first attempt did, not nil.
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
	if redis.call('exists', KEYS[3]) == 1 then
		return 1
	end
	return nil
end
if tonumber(ARGV[2]) > 0 then
	redis.call('hset', KEYS[1], ARGV[1], ARGV[2])
	return 0
end
redis.call('del', KEYS[1])
redis.call(ARGV[3], KEYS[2], '0')
redis.call('set', KEYS[3], '1', 'px', ARGV[4])
return 1
