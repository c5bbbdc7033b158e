-- sem_release: set a Semaphore holder's permits to fewer (0 gives them all
-- back), optionally take a waiter out of the queue, and wake the waiters
-- whose requests fit now.
--
-- KEYS[1..7] as sem_acquire: holders, leases, size, queue, heartbeats,
--            requests, channel
-- ARGV[1]  the holder id
-- ARGV[2]  the permits the holder keeps
-- ARGV[3]  a waiter id to remove from the queue (a waiter giving up), or ""
-- ARGV[4]  the publish command: "publish" or "spublish"
--
-- Reply: {status, id...}: status 1 done, -1 the holder had no permits left
--        to keep (its lease had lapsed); then the ids of the waiters woken
--        (each published on the channel).
--
-- Idempotent: the holder's count is set and removing a waiter twice removes
-- it once, so a retry after a lost reply changes nothing more.
local holders, leases, sizeKey, queue, alive, want, channel =
	KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local holder, keep, id = ARGV[1], tonumber(ARGV[2]), ARGV[3]

if id ~= '' then
	redis.call('zrem', queue, id)
	redis.call('zrem', alive, id)
	redis.call('hdel', want, id)
end
local status = 1
if not redis.call('hget', holders, holder) then
	if keep > 0 then
		status = -1
	end
elseif keep > 0 then
	redis.call('hset', holders, holder, keep)
else
	redis.call('hdel', holders, holder)
	redis.call('zrem', leases, holder)
end

local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
for _, h in ipairs(redis.call('zrangebyscore', leases, '-inf', now)) do
	redis.call('hdel', holders, h)
	redis.call('zrem', leases, h)
end
for _, w in ipairs(redis.call('zrangebyscore', alive, '-inf', now)) do
	redis.call('zrem', queue, w)
	redis.call('zrem', alive, w)
	redis.call('hdel', want, w)
end

local total = 0
for _, v in ipairs(redis.call('hvals', holders)) do
	total = total + tonumber(v)
end
local reply = {status}
local acc, free = 0, tonumber(redis.call('get', sizeKey) or '0') - total
for _, w in ipairs(redis.call('zrange', queue, 0, -1)) do
	acc = acc + tonumber(redis.call('hget', want, w) or '0')
	if acc > free then
		break
	end
	redis.call(ARGV[4], channel, w)
	reply[#reply + 1] = w
end
return reply
