-- mutex_force_unlock: delete the lock whoever holds it and wake its waiters.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the unlock channel
-- ARGV[1]  the publish command: "publish" or "spublish"
-- ARGV[2]  the message: "0" (wake one waiter) for a Mutex, "1" (wake all)
--          for an RWMutex
--
-- Reply: the fields of the hash deleted (the holds it ended, and an RWMutex's
-- "mode"); empty when there was no lock.
local fields = redis.call('hkeys', KEYS[1])
if redis.call('del', KEYS[1]) == 1 then
	redis.call(ARGV[1], KEYS[2], ARGV[2])
end
return fields
