-- mutex_force_unlock: delete the lock whoever holds it and wake its waiters.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the unlock channel
-- ARGV[1]  the publish command: "publish" or "spublish"
--
-- Reply: 1 when a lock was deleted, 0 when there was none.
if redis.call('del', KEYS[1]) == 1 then
	redis.call(ARGV[1], KEYS[2], '0')
	return 1
end
return 0
