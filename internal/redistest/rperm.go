package redistest

// Scripts that stand in for a Java service's Redisson
// RPermitExpirableSemaphore (the free permits at the name, each taken
// permit's id scored by the end of its lease in {name}:timeout, the count
// published on redisson_sc:{name}), written here from Redisson's protocol for
// the tests of the Go side that shares it. The clock is the caller's.
const (
	// JavaPermTryAcquire is tryAcquire(n, lease). KEYS: the free permits,
	// the leases, the channel. ARGV: n, the end of the lease (ms, or
	// 922337203685477 for none), the Java clock (ms), the publish command,
	// then the n permit ids. Ended leases are given back first (the count
	// published). Reply: "OK" taken; ":<ms>" the earliest lease's end when
	// not enough are free; nil when none will end.
	JavaPermTryAcquire = `
local ended = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3])
if #ended > 0 then
	redis.call('zrem', KEYS[2], unpack(ended))
	local v = redis.call('incrby', KEYS[1], #ended)
	if v > 0 then redis.call(ARGV[4], KEYS[3], v) end
end
local free = redis.call('get', KEYS[1])
if free and tonumber(free) >= tonumber(ARGV[1]) then
	redis.call('decrby', KEYS[1], ARGV[1])
	for i = 5, #ARGV do redis.call('zadd', KEYS[2], ARGV[2], ARGV[i]) end
	return 'OK'
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES')
if first[1] and first[2] ~= '922337203685477' then return ':' .. first[2] end
return nil`

	// JavaPermRelease is tryRelease(permitId). KEYS: the free permits, the
	// channel, the leases. ARGV: the id, the Java clock (ms), the publish
	// command. Reply 1 released; 0 not taken, or its lease had ended (then
	// it is given back all the same).
	JavaPermRelease = `
local expire = redis.call('zscore', KEYS[3], ARGV[1])
if redis.call('zrem', KEYS[3], ARGV[1]) ~= 1 then return 0 end
redis.call(ARGV[3], KEYS[2], redis.call('incrby', KEYS[1], 1))
if tonumber(expire) <= tonumber(ARGV[2]) then return 0 end
return 1`
)
