-- rw_lock: take or re-enter the write hold of a Redisson-compatible RWMutex.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  waiting writers (sorted set, see rw_rlock)
-- KEYS[3]  the hold's latch: the lock's latch prefix, ":", ARGV[2] (see
--          rw_unlock)
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  the write hold's field "<uuid>:<n>:write": its identity, fresh
--          for each hold
-- ARGV[3]  the write hold count before this acquire: 0 for a first acquire
-- ARGV[4]  this writer's id in KEYS[2]
-- ARGV[5]  how long a waiting writer's claim lasts, in milliseconds
-- ARGV[6]  "1" if the writer will wait (and claims), "0" for a single try
--
-- Reply: nil when the write hold has ARGV[3] + 1 holds now (or its field was
--        there: an earlier attempt of the same call took it); -3 when a
--        re-entry finds the hold gone (lost); -4 when a first acquire finds
--        its hold's latch (a late copy of an acquire its caller undid, which
--        must take nothing); otherwise how long to wait, in milliseconds
--        (the lock's PTTL).
--
-- A writer that finds the lock taken records itself as waiting (new readers
-- then wait behind it) until the server's clock passes now + ARGV[5]; it
-- tries again before then to keep its claim. Taking the lock removes it. The
-- count is compare-and-set.
local expect = tonumber(ARGV[3])
local cur = redis.call('hget', KEYS[1], ARGV[2])
if cur then
	if tonumber(cur) == expect then
		redis.call('hset', KEYS[1], ARGV[2], expect + 1)
	end
	redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), tonumber(ARGV[1])))
	redis.call('zrem', KEYS[2], ARGV[4])
	return nil
end
if expect > 0 then
	return -3
end
if redis.call('exists', KEYS[1]) == 0 then
	if redis.call('exists', KEYS[3]) == 1 then
		return -4
	end
	redis.call('hset', KEYS[1], 'mode', 'write', ARGV[2], 1)
	redis.call('pexpire', KEYS[1], ARGV[1])
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
