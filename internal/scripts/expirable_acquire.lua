-- expirable_acquire: take permits, each with an id and a lease, from a
-- semaphore in Redisson's RPermitExpirableSemaphore layout.
--
-- KEYS[1]  the free permits (absent until the first use sets them)
-- KEYS[2]  the taken permits' leases: id -> end of lease (ms)
-- KEYS[3]  the channel (redisson_sc:{name})
-- KEYS[4]  this call's latch: "1" once it took its permits, "0" once it gave
--          up (expirable_undo); the same key for every attempt of one call
-- ARGV[1]  the free permits to start from when KEYS[1] is absent (the
--          handle's size: Redisson's trySetPermits), written and published
--          as given
-- ARGV[2]  the lease in milliseconds, or -1 for none (Redisson's permit
--          without a lease: its end is 922337203685477, it never ends)
-- ARGV[3]  how long the latch lasts, in milliseconds
-- ARGV[4]  the publish command: "publish", or "spublish" on Redis Cluster
-- ARGV[5...] the ids of the permits to take, one per permit
--
-- Reply: {1, free after} taken (now, or by an earlier attempt of this call,
--                        whose permits' leases then start again now);
--        {0, wait} not enough free: wait is how long (ms) until the
--                  earliest lease ends, -1 when none will;
--        {-3, 0} an earlier attempt of this call took the permits, and one
--                of their leases has ended since (the permit may be
--                another's by now): the call has nothing;
--        {-4, 0} the call gave up: a late copy of one of its attempts takes
--                nothing.
--
-- Leases end by the server's clock here and by the Java client's in Java's
-- calls; a permit whose lease ended is given back by whichever call comes
-- first, as Redisson's are.
local free, leases, channel, latchKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local latch = redis.call('get', latchKey)
if latch == '0' then
	return {-4, 0}
end
local now = serverMS()
local lease = tonumber(ARGV[2])
if latch == '1' then
	-- The caller did not see the earlier attempt's reply: its permits are
	-- the call's only if every lease still runs, and then for a whole lease
	-- from this reply, which is the one the caller reads.
	for i = 5, #ARGV do
		local ends = tonumber(redis.call('zscore', leases, ARGV[i]))
		if not ends or ends <= now then
			return {-3, 0}
		end
	end
	if lease >= 0 then
		for i = 5, #ARGV do
			redis.call('zadd', leases, now + lease, ARGV[i])
		end
	end
	return {1, tonumber(redis.call('get', free)) or 0}
end
local n = reclaim(free, leases, channel, now, ARGV[4])
if not n then
	-- The text, as trySetPermits writes it: a Lua number would be rounded
	-- above 2^53, and written with an exponent from 10^17 on.
	redis.call('set', free, ARGV[1])
	n = tonumber(ARGV[1])
	if n > 0 then
		redis.call(ARGV[4], channel, ARGV[1]) -- Java waiters on an unset count
	end
end
local want = #ARGV - 4
if n < want then
	local first = redis.call('zrange', leases, 0, 0, 'withscores')
	if first[2] and tonumber(first[2]) < 922337203685477 then
		return {0, tonumber(first[2]) - now}
	end
	return {0, -1}
end
local left = redis.call('decrby', free, want)
local ends = 922337203685477
if lease >= 0 then
	ends = now + lease
end
for i = 5, #ARGV do
	redis.call('zadd', leases, ends, ARGV[i])
end
local ttl = redis.call('pttl', free)
if ttl > 0 then
	redis.call('pexpire', leases, ttl)
end
redis.call('set', latchKey, '1', 'px', ARGV[3])
return {1, left}
