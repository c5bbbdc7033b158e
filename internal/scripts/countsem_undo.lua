-- countsem_undo: a CountingSemaphore call that gives up after an attempt of
-- unknown outcome (its reply lost, its context ended while the attempt was on
-- its way) takes back what that attempt may have taken, and leaves its latch
-- at "0" so that a late copy of the attempt takes nothing.
--
-- KEYS[1]  the free permits (a string integer)
-- KEYS[2]  the channel (redisson_sc:{name})
-- KEYS[3]  the call's latch (see countsem_acquire)
-- ARGV[1]  the permits the call asked for
-- ARGV[2]  how long the latch lasts, in milliseconds: longer than a late
--          copy can be on its way
-- ARGV[3]  the publish command: "publish", or "spublish" on Redis Cluster
--
-- Reply: 1 when the call had taken its permits (given back now, the count
-- published), 0 when it had not (or was undone already).
local took = redis.call('get', KEYS[3]) == '1'
redis.call('set', KEYS[3], '0', 'px', ARGV[2])
if not took then
	return 0
end
local free = redis.call('incrby', KEYS[1], ARGV[1])
redis.call(ARGV[3], KEYS[2], free)
return 1
