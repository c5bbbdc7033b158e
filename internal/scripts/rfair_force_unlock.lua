-- rfair_force_unlock: delete a FairMutex kept in Redisson's RFairLock layout
-- whoever holds it, keep the queue, and wake its head as a Java forceUnlock
-- does.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  Redisson's queue
-- KEYS[3]  Redisson's eviction times
-- KEYS[4]  the channel prefix
-- ARGV[1]  the publish command
--
-- Reply: the fields of the holds it deleted (empty when it was not locked).
local fields = redis.call('hkeys', KEYS[1])
if redis.call('del', KEYS[1]) == 1 then
	wakeHead(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], serverMS())
end
return fields
