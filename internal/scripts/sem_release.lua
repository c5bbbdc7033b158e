-- sem_release: set a Semaphore holder's permits to fewer (0 gives them all
-- back), optionally take a waiter out of the queue, and wake the waiters
-- whose requests fit now.
-- (The functions sem_* are sem_lib.lua's, which comes first.)
--
-- KEYS[1..7] as sem_acquire: holders, leases, size, queue, heartbeats,
--            requests, channel
-- KEYS[8]  the term's latch: the semaphore's latch prefix, ":", ARGV[1]
-- ARGV[1]  the holder id
-- ARGV[2]  the permits the holder keeps, in decimal (written as given, as
--          sem_acquire writes ARGV[4])
-- ARGV[3]  a waiter id to remove from the queue (a waiter giving up), or ""
-- ARGV[4]  the publish command: "publish" or "spublish"
-- ARGV[5]  the version of the holder's entry the caller last saw confirmed
--          ("0": the term has none yet), as for sem_acquire
-- ARGV[6]  the version this call writes
-- ARGV[7]  when ARGV[2] is 0, how long (ms) the term's latch lasts, which
--          refuses a late copy of the term's first acquire (see sem_acquire);
--          "0" for none
--
-- Reply: {status, id...}: status 1 done (or done before: this very call,
--        repeated), -1 the holder had no permits left to keep (its lease had
--        lapsed), -4 a late copy of an older call of the holder (nothing
--        changed); then the ids of the waiters woken (each published on the
--        channel).
--
-- Compare-and-set as sem_acquire, so that a retry after a lost reply, or a
-- copy arriving late, changes nothing more; removing a waiter twice removes
-- it once.
local holders, leases, sizeKey, queue, alive, want, channel =
	KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local holder, keep, id = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local expect, version = tonumber(ARGV[5]), tonumber(ARGV[6])

if id ~= '' then
	sem_dequeue(queue, alive, want, id)
end
-- Expired and lease-less holders first, so that a release finds its own
-- lapsed entry gone.
local now = sem_now()
sem_reap_holders(holders, leases, now)
sem_reap_waiters(queue, alive, want, now)

local status = 1
local entry = redis.call('hget', holders, holder)
local seen = nil
if entry then
	seen = tonumber(string.match(entry, ':(%d+)$') or '')
end
if not entry then
	if keep > 0 then
		status = -1
	end
elseif seen == version then
	status = 1 -- this very call, repeated
elseif seen == nil or seen < expect or seen > version then
	status = -4
elseif keep > 0 then
	redis.call('hset', holders, holder, ARGV[2] .. ':' .. ARGV[6])
else
	redis.call('hdel', holders, holder)
	redis.call('zrem', leases, holder)
end
if keep == 0 and status ~= -4 and tonumber(ARGV[7]) > 0 then
	redis.call('set', KEYS[8], '1', 'px', ARGV[7])
end

local free = tonumber(redis.call('get', sizeKey) or '0') - sem_taken(holders)
local reply = {status}
for _, w in ipairs(sem_wake(queue, alive, want, free, ARGV[4], channel, '')) do
	reply[#reply + 1] = w
end
return reply
