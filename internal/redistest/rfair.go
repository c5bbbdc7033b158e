package redistest

// Scripts that stand in for a Java service's Redisson RFairLock (the RLock
// hash at the name, a list of waiters, their eviction times in a sorted set,
// a channel per waiter), written here from Redisson's protocol for the tests
// of the Go side that shares it. The clock is the caller's, as a Java
// client's is its own.
const (
	// javaEvictStale evicts the heads of the queue (KEYS[2]) whose eviction
	// time (KEYS[3]) is at or before now, as each Java call does first.
	javaEvictStale = `while true do
	local first = redis.call('lindex', KEYS[2], 0)
	if not first then break end
	local t = redis.call('zscore', KEYS[3], first)
	if not t or tonumber(t) > now then break end
	redis.call('zrem', KEYS[3], first)
	redis.call('lpop', KEYS[2])
end`

	// JavaFairTryLock is a Java thread's lock attempt. KEYS: the hash, the
	// queue, the eviction times. ARGV: the lease (ms), the thread's id
	// ("<uuid>:<threadId>"), the wait (fairLockWaitTimeout, ms), the Java
	// clock (ms). Reply: nil when it holds the lock (a fresh acquisition
	// lowers every waiter's time by the wait; a re-entry counts up), else
	// the lock's remaining lease, after queueing the thread once at the end
	// with the time the waiter before it has (or now plus the lock's lease)
	// plus the wait. Stale heads (time at or before now) are evicted first.
	JavaFairTryLock = `
local now = tonumber(ARGV[4])
` + javaEvictStale + `
local free = redis.call('exists', KEYS[1]) == 0
if free and (redis.call('exists', KEYS[2]) == 0 or redis.call('lindex', KEYS[2], 0) == ARGV[2]) then
	redis.call('lpop', KEYS[2])
	redis.call('zrem', KEYS[3], ARGV[2])
	for _, w in ipairs(redis.call('zrange', KEYS[3], 0, -1)) do
		redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), w)
	end
	redis.call('hset', KEYS[1], ARGV[2], 1)
	redis.call('pexpire', KEYS[1], ARGV[1])
	return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
	redis.call('hincrby', KEYS[1], ARGV[2], 1)
	redis.call('pexpire', KEYS[1], ARGV[1])
	return nil
end
if redis.call('zscore', KEYS[3], ARGV[2]) then
	return math.max(0, redis.call('pttl', KEYS[1]))
end
local last = redis.call('lindex', KEYS[2], -1)
local ahead
if last and last ~= ARGV[2] then
	ahead = redis.call('zscore', KEYS[3], last)
end
local ttl
if ahead then
	ttl = tonumber(ahead) - now
else
	ttl = redis.call('pttl', KEYS[1])
end
if redis.call('zadd', KEYS[3], ttl + tonumber(ARGV[3]) + now, ARGV[2]) == 1 then
	redis.call('rpush', KEYS[2], ARGV[2])
end
return ttl`

	// JavaFairUnlock is a Java thread's unlock. KEYS: the hash, the queue,
	// the eviction times, the channel prefix. ARGV: the thread's id, the
	// lease (ms), the Java clock (ms), the publish command. Reply: 1 the
	// lock is free (it was already, or this released it; "0" is then
	// published on the channel of the head of the queue), 0 still held by a
	// re-entry, nil not the holder.
	JavaFairUnlock = `
local now = tonumber(ARGV[3])
` + javaEvictStale + `
local function wake()
	local next = redis.call('lindex', KEYS[2], 0)
	if next then redis.call(ARGV[4], KEYS[4] .. ':' .. next, '0') end
	return 1
end
if redis.call('exists', KEYS[1]) == 0 then return wake() end
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return nil end
if redis.call('hincrby', KEYS[1], ARGV[1], -1) > 0 then
	redis.call('pexpire', KEYS[1], ARGV[2])
	return 0
end
redis.call('del', KEYS[1])
return wake()`

	// JavaFairGiveUp is a Java waiter's giving up (acquireFailed). KEYS: the
	// queue, the eviction times. ARGV: the thread's id, the wait (ms). The
	// waiters behind it have their times lowered by the wait.
	JavaFairGiveUp = `
local q = redis.call('lrange', KEYS[1], 0, -1)
local behind = false
for _, w in ipairs(q) do
	if behind then redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), w) end
	if w == ARGV[1] then behind = true end
end
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('lrem', KEYS[1], 0, ARGV[1])
return 0`
)
