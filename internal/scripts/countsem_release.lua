-- countsem_release: give permits back to a CountingSemaphore, in Redisson's
-- RSemaphore layout, and publish the count, as Redisson's release does: the
-- message wakes Go and Java waiters.
--
-- KEYS[1]  the free permits (a string integer)
-- KEYS[2]  the channel (redisson_sc:{name})
-- KEYS[3]  this release's latch: set once it is applied
-- ARGV[1]  the permits to give back, a positive integer
-- ARGV[2]  how long the latch lasts, in milliseconds
-- ARGV[3]  the publish command: "publish", or "spublish" on Redis Cluster
--
-- Reply: {1, free after} applied; {0, free} a repeat of a release already
-- applied (its reply was lost): nothing added twice.
if redis.call('exists', KEYS[3]) == 1 then
	return {0, tonumber(redis.call('get', KEYS[1])) or 0}
end
local free = redis.call('incrby', KEYS[1], ARGV[1])
redis.call('set', KEYS[3], '1', 'px', ARGV[2])
redis.call(ARGV[3], KEYS[2], free)
return {1, free}
