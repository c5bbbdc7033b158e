-- waitgroup_add: add delta to a WaitGroup's counter, in Redisson's RCountDownLatch
-- layout.
--
-- KEYS[1]  the counter: a string integer; absent means zero
-- KEYS[2]  the channel (redisson_countdownlatch__channel__{name})
-- ARGV[1]  delta, a non-zero integer
-- ARGV[2]  the publish command: "publish", or "spublish" on Redis Cluster
--
-- Reply: {1, count after} when applied; {0, count} when the counter would go
-- below zero (nothing changed). Each count is the counter's decimal text. A
-- delta that takes the counter out of a 64-bit integer is refused with
-- INCRBY's error, changing nothing.
--
-- The change that brings the counter to zero deletes it and publishes "0",
-- as Redisson's countDown does, which wakes Go and Java waiters alike. The
-- counter has no expiry, as in Redisson.
--
-- Redis adds (INCRBY), not Lua: a Lua number is a double, exact only up to
-- 2^53, and written back from 10^17 on with an exponent ("1e+17"), which no
-- side reads as an integer. Only the sign and zero of INCRBY's reply, exact
-- in a double, are read here.
local count = redis.call('get', KEYS[1])
if count and not string.match(count, '^-?%d+$') then
	return redis.error_reply('the counter at ' .. KEYS[1] .. ' is not an integer')
end
local after = redis.call('incrby', KEYS[1], ARGV[1])
if after < 0 then
	if count then
		redis.call('set', KEYS[1], count)
	else
		redis.call('del', KEYS[1])
	end
	return {0, count or '0'}
end
if after == 0 then
	redis.call('del', KEYS[1])
	redis.call(ARGV[2], KEYS[2], '0')
	return {1, '0'}
end
return {1, redis.call('get', KEYS[1])}
