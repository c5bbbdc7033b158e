package redistest

// Scripts that stand in for a Java service's Redisson RSemaphore, written
// here from Redisson's protocol (the free permits at the name, the count
// published on redisson_sc:{name} after a release), for the tests of the
// Go side that shares it.
const (
	// JavaSemTryAcquire is tryAcquire(n): KEYS[1] the free permits, ARGV[1]
	// n; takes n if that many are free. Reply 1 taken, 0 not.
	JavaSemTryAcquire = `
local free = redis.call('get', KEYS[1])
if free ~= false and tonumber(free) >= tonumber(ARGV[1]) then
	redis.call('decrby', KEYS[1], ARGV[1])
	return 1
end
return 0`
	// JavaSemRelease is release(n): KEYS[1] the free permits, KEYS[2] the
	// channel, ARGV[1] n, ARGV[2] the publish command (SPUBLISH on a
	// cluster). Reply: the count after.
	JavaSemRelease = `
local free = redis.call('incrby', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], free)
return free`
)
