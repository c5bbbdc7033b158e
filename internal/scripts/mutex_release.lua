-- mutex_release: leave a reentrant hold, or release the lock and hand it to
-- the first live waiter of redisync's queue (or wake waiters when there is
-- none).
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the unlock channel (Redisson's redisson_lock__channel:{name})
-- KEYS[3]  the hold's latch: the lock's latch prefix, ":", ARGV[1]
-- KEYS[4]  the queue of waiting calls (see mutex_wait); absent for a lock
--          that queues none (an Election's leadership)
-- KEYS[5]  the waiters' heartbeats (see mutex_wait); absent with KEYS[4]
-- KEYS[6]  the start of the current run of handovers (server ms); absent
--          with KEYS[4]
-- ARGV[1]  the hold's field
-- ARGV[2]  the hold count before this release
-- ARGV[3]  the hold count after it: 0 releases the lock
-- ARGV[4]  the publish command: "publish", or "spublish" on Redis Cluster
-- ARGV[5]  the latch's lifetime in milliseconds; "0" for none (a quorum's
--          undo of an attempt that fell short: its retry takes the field)
-- ARGV[6]  "1" to leave the latch even when the hold is not there: the undo
--          of an acquire of unknown outcome, whose late copy the latch refuses
-- ARGV[7]  a waiting call's field to take out of the queue first (a call
--          giving up), or "" (absent without KEYS[4])
-- ARGV[8]  how long a run of handovers lasts, in milliseconds (absent
--          without KEYS[4])
-- ARGV[9]  "1" when the hold came through the queue (handed by a release,
--          or taken by a queued call), so that a run of handovers may be
--          going on, which this release ends if it finds nobody queued
--          (absent without KEYS[4])
--
-- Reply: {status, n}: status 1 released (or a repeat of this release), 0
--        still held, -1 the hold is not there; n is the place number of the
--        waiter the lock was handed to, or "".
--
-- A final release deletes the lock and hands it to the first waiter of the
-- queue whose heartbeat is current, skipping (and removing) dead ones: the
-- waiter's field holds the lock once, expiring with the waiter's heartbeat
-- deadline (the waiter renews it; a waiter that died holds it no longer than
-- that), and the place number is published, then "0". Redisson's waiters
-- ignore the number; the "0" (Redisson's unlock message, which wakes one
-- waiter) makes the waiters outside the queue look again, so that they find
-- the lock held until the waiter's heartbeat deadline at most, not until the
-- lease they read before: a waiter that died holds it from nobody longer
-- than that. (redisync's subscribers take a "0" that follows a place number
-- as meant for the waiters without a place.) With no live waiter the key
-- stays deleted and only "0" is published.
-- So that those outside the queue (Redisson's waiters, a MultiMutex's) are
-- not starved by a queue that never empties, handovers come in runs of
-- ARGV[8] ms: the first release after a run leaves the lock free and
-- publishes "0", and whoever takes it starts the next run with its release;
-- the release of a hold that came through the queue (ARGV[9]), if it finds
-- nobody queued, ends the run too. A hold that did not (an uncontended one)
-- is no part of a run, and its release spares the DEL. (A run's key that a
-- holder's death left behind expires within a minute; until then, a queue
-- that forms finds the run over at its first release, which leaves the lock
-- free once, as at the end of any run.)
--
-- An uncontended final release runs four commands: HDEL, the latch's SET,
-- EXISTS of the queue, PUBLISH.
--
-- The final release latches the hold's field: a repeat of the release (its
-- reply was lost) then answers 1 as the first did, and a late copy of the
-- hold's first acquire takes nothing (mutex_acquire, mutex_wait). A count
-- above zero is compare-and-set, as in mutex_acquire.
local queue, alive, run = KEYS[4], KEYS[5], KEYS[6]
if queue and ARGV[7] ~= '' then
	redis.call('zrem', queue, ARGV[7])
	redis.call('zrem', alive, ARGV[7])
end

-- handOver gives the free lock to the first live waiter and returns its
-- place number, or nil when no waiter is alive or the run is over.
local function handOver()
	if not queue then
		return nil
	end
	if redis.call('exists', queue) == 0 then
		if ARGV[9] == '1' then
			redis.call('del', run) -- nobody queued: the lock goes free, and a run ends
		end
		return nil
	end
	if redis.call('exists', KEYS[1]) == 1 then
		return nil -- another field holds it: the key was rewritten by someone else
	end
	local now = serverMS()
	local start = tonumber(redis.call('get', run))
	if start and now - start >= tonumber(ARGV[8]) then
		redis.call('del', run)
		return nil
	end
	while true do
		local head = redis.call('zrange', queue, 0, 0, 'withscores')
		if not head[1] then
			if start then
				redis.call('del', run)
			end
			return nil
		end
		local deadline = tonumber(redis.call('zscore', alive, head[1]))
		redis.call('zrem', queue, head[1])
		redis.call('zrem', alive, head[1])
		if deadline and deadline > now then
			if not start then
				redis.call('set', run, now, 'px', 60000)
			end
			redis.call('hset', KEYS[1], head[1], 1)
			redis.call('pexpire', KEYS[1], deadline - now)
			return head[2]
		end
	end
end

-- notThere answers for a release whose hold is not in the lock.
local function notThere()
	if releasedBefore(KEYS[3], ARGV[6], ARGV[5]) then
		return {1, ''}
	end
	return {-1, ''}
end

if tonumber(ARGV[3]) > 0 then
	local cur = redis.call('hget', KEYS[1], ARGV[1])
	if not cur then
		return notThere()
	end
	if cur == ARGV[2] then
		redis.call('hset', KEYS[1], ARGV[1], ARGV[3])
	end
	return {0, ''}
end
-- removeHold deletes the lock when the hold holds it, and reports whether
-- it did.
local function removeHold()
	if queue then
		-- A Mutex's hash has the hold's field alone: deleting the field
		-- deletes the lock, in one command.
		return redis.call('hdel', KEYS[1], ARGV[1]) == 1
	end
	-- An Election's leadership also holds its value: the key goes whole.
	if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
		return false
	end
	redis.call('del', KEYS[1])
	return true
end

if not removeHold() then
	return notThere()
end
if ARGV[5] ~= '0' then
	redis.call('set', KEYS[3], '1', 'px', ARGV[5])
end
local n = handOver()
if n then
	redis.call(ARGV[4], KEYS[2], n)
end
redis.call(ARGV[4], KEYS[2], '0')
return {1, n or ''}
