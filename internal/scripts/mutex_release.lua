-- mutex_release: leave a reentrant hold, or release the lock and wake waiters.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the unlock channel (Redisson's redisson_lock__channel:{name})
-- KEYS[3]  the prefix of the lock's latch keys: a hold's latch is
--          KEYS[3]..":"..field
-- ARGV[1]  the hold's field
-- ARGV[2]  the hold count before this release
-- ARGV[3]  the hold count after it: 0 releases the lock
-- ARGV[4]  the publish command: "publish", or "spublish" on Redis Cluster
-- ARGV[5]  the latch's lifetime in milliseconds
-- ARGV[6]  "1" to leave the latch even when the hold is not there: the undo
--          of an acquire of unknown outcome, whose late copy the latch refuses
--
-- Reply: 1 released (key deleted, "0" published: Redisson's unlock message);
--        0 still held; nil the hold is not there.
--
-- The final release latches the hold's field: a repeat of the release (its
-- reply was lost) then answers 1 as the first did, and a late copy of the
-- hold's first acquire takes nothing (mutex_acquire). A count above zero is
-- compare-and-set, as in mutex_acquire.
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
	if releasedBefore(KEYS[3] .. ':' .. ARGV[1], ARGV[6], ARGV[5]) then
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
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], '0')
redis.call('set', KEYS[3] .. ':' .. ARGV[1], '1', 'px', ARGV[5])
return 1
