-- fenced_acquire: mutex_acquire for a FencedMutex, granting a fencing token.
--
-- KEYS[1]  the lock hash (Redisson's RLock layout)
-- KEYS[2]  the token counter (Redisson's redisson_lock_token:{name}), no expiry
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  the owner's field
-- ARGV[3]  the hold count the owner has after this acquire
--
-- Reply: {1, token} when the owner holds the lock now: token is greater than
--        every token granted before for this name;
--        {-3, 0} when ARGV[3] > 1 but the owner's hold is gone (lost);
--        {0, pttl} when another owner holds the lock.
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
-- set, not incremented, so the hold itself is not taken twice.
local held = redis.call('hexists', KEYS[1], ARGV[2]) == 1
if not held then
	if tonumber(ARGV[3]) > 1 then
		return {-3, 0}
	end
	if redis.call('exists', KEYS[1]) == 1 then
		return {0, redis.call('pttl', KEYS[1])}
	end
end
redis.call('hset', KEYS[1], ARGV[2], ARGV[3])
redis.call('pexpire', KEYS[1], ARGV[1])
local now = redis.call('time')
local floor = tonumber(now[1]) * 1000000 + tonumber(now[2])
local token = math.max(tonumber(redis.call('get', KEYS[2]) or '0') + 1, floor)
redis.call('set', KEYS[2], string.format('%d', token))
return {1, token}
