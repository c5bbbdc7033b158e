-- rw_lock: take or re-enter the write hold of a Redisson-compatible RWMutex.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  waiting writers (sorted set, see rw_rlock)
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  the owner's write field "<uuid>:<owner>:write"
-- ARGV[3]  the write hold count the owner has after this acquire
-- ARGV[4]  this writer's id in KEYS[2]
-- ARGV[5]  how long a waiting writer's claim lasts, in milliseconds
-- ARGV[6]  "1" if the writer will wait (and claims), "0" for a single try
--
-- Reply: nil when the write hold is taken; -3 when ARGV[3] > 1 but the
--        owner's write hold is gone (lost); otherwise the lock's PTTL.
--
-- A writer that finds the lock taken records itself as waiting (new readers
-- then wait behind it) until the server's clock passes now + ARGV[5]; it
-- tries again before then to keep its claim. Taking the lock removes it.
local n = tonumber(ARGV[3])
local cur = tonumber(redis.call('hget', KEYS[1], ARGV[2]) or '0')
if cur == 0 and n > 1 then
	return -3
end
if cur > 0 or redis.call('exists', KEYS[1]) == 0 then
	redis.call('hset', KEYS[1], 'mode', 'write', ARGV[2], n)
	redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), tonumber(ARGV[1])))
	redis.call('zrem', KEYS[2], ARGV[4])
	return nil
end
if ARGV[6] == '1' then
	local now = redis.call('time')
	local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
	redis.call('zadd', KEYS[2], ms + tonumber(ARGV[5]), ARGV[4])
	redis.call('pexpire', KEYS[2], ARGV[5])
end
return redis.call('pttl', KEYS[1])
