-- wg_add: add delta to a WaitGroup's counter, in Redisson's RCountDownLatch
-- layout.
--
-- KEYS[1]  the counter: a string integer; absent means zero
-- KEYS[2]  the channel (redisson_countdownlatch__channel__{name})
-- ARGV[1]  delta, a non-zero integer
-- ARGV[2]  the publish command: "publish", or "spublish" on Redis Cluster
--
-- Reply: {1, count after} when applied; {0, count} when the counter would go
-- below zero (nothing changed).
--
-- The change that brings the counter to zero deletes it and publishes "0",
-- as Redisson's countDown does, which wakes Go and Java waiters alike. The
-- counter has no expiry, as in Redisson.
local count = tonumber(redis.call('get', KEYS[1]) or '0')
if count == nil then
	return redis.error_reply('the counter at ' .. KEYS[1] .. ' is not an integer')
end
local after = count + tonumber(ARGV[1])
if after < 0 then
	return {0, count}
end
if after == 0 then
	redis.call('del', KEYS[1])
	redis.call(ARGV[2], KEYS[2], '0')
else
	redis.call('set', KEYS[1], after)
end
return {1, after}
