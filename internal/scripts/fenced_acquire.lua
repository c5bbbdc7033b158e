-- fenced_acquire: mutex_acquire for a FencedMutex, granting a fencing token.
--
-- KEYS[1]  the lock hash (Redisson's RLock layout)
-- KEYS[2]  the token counter (Redisson's redisson_lock_token:{name}), no expiry
-- KEYS[3]  the hold's latch: the lock's latch prefix, ":", ARGV[2] (see
--          mutex_release)
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  the hold's field: its identity, fresh for each hold
-- ARGV[3]  the hold count before this acquire: 0 for a first acquire
--
-- Reply: {1, token} when the hold has ARGV[3] + 1 holds now: token is greater
--        than every token granted before for this name;
--        {-3, 0} when a re-entry finds the hold gone (lost);
--        {-4, 0} when a first acquire finds its hold's latch (a late copy of
--        an acquire its caller undid: see mutex_acquire);
--        {0, pttl} when another hold has the lock.
--
-- The counter is incremented as Redisson's RFencedLock does, and floored at the
-- server's clock in microseconds, so that tokens keep increasing when the
-- counter is lost (deleted, or a restart without persistence): a script runs
-- for more than a microsecond, so the counter never runs ahead of the clock,
-- and a fresh counter starts above every token granted before. Only a server
-- clock that steps backwards (or a failover to a node whose clock lags) can
-- break that.
--
-- A repeated call after a lost reply grants a new, higher token; the count is
-- compare-and-set, so the hold itself is not taken twice.
local expect = tonumber(ARGV[3])
local cur = redis.call('hget', KEYS[1], ARGV[2])
if cur then
	if tonumber(cur) == expect then
		redis.call('hset', KEYS[1], ARGV[2], expect + 1)
	end
else
	if expect > 0 then
		return {-3, 0}
	end
	if redis.call('exists', KEYS[1]) == 1 then
		return {0, redis.call('pttl', KEYS[1])}
	end
	if redis.call('exists', KEYS[3]) == 1 then
		return {-4, 0}
	end
	redis.call('hset', KEYS[1], ARGV[2], 1)
end
redis.call('pexpire', KEYS[1], ARGV[1])
local now = redis.call('time')
local floor = tonumber(now[1]) * 1000000 + tonumber(now[2])
local token = math.max(tonumber(redis.call('get', KEYS[2]) or '0') + 1, floor)
redis.call('set', KEYS[2], string.format('%d', token))
return {1, token}
