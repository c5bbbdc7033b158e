-- sem_lib: the functions the Semaphore scripts share. scripts.loadWith puts
-- this text before each of them (sem_acquire, sem_release, sem_force_unlock,
-- sem_renew), so it only defines local functions. The keys they take are
-- those of sem_acquire's contract.

-- sem_now returns the server's time in milliseconds.
local function sem_now()
	local t = redis.call('time')
	return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- sem_extend makes key last at least ms more milliseconds (a key without an
-- expiry gets one).
local function sem_extend(key, ms)
	local ttl = redis.call('pttl', key)
	if ttl == -1 or (ttl >= 0 and ttl < tonumber(ms)) then
		redis.call('pexpire', key, ms)
	end
end

-- sem_dequeue takes waiter w out of the queue, the heartbeats and the
-- requests.
local function sem_dequeue(queue, alive, want, w)
	redis.call('zrem', queue, w)
	redis.call('zrem', alive, w)
	redis.call('hdel', want, w)
end

-- sem_reap_holders gives back the permits of the holders whose lease ended
-- by now, and of holders without a lease (their lease entry was deleted by
-- someone else: nothing would ever expire them). It reports whether it gave
-- any back.
local function sem_reap_holders(holders, leases, now)
	local freed = false
	for _, h in ipairs(redis.call('zrangebyscore', leases, '-inf', now)) do
		redis.call('hdel', holders, h)
		redis.call('zrem', leases, h)
		freed = true
	end
	for _, h in ipairs(redis.call('hkeys', holders)) do
		if not redis.call('zscore', leases, h) then
			redis.call('hdel', holders, h)
			freed = true
		end
	end
	return freed
end

-- sem_reap_waiters drops the waiters whose heartbeat lapsed by now, and
-- reports whether there were any.
local function sem_reap_waiters(queue, alive, want, now)
	local dead = redis.call('zrangebyscore', alive, '-inf', now)
	for _, w in ipairs(dead) do
		sem_dequeue(queue, alive, want, w)
	end
	return #dead > 0
end

-- sem_wanted returns the permits that waiter w asks for. A request that is
-- not a number (written by someone else) would stall the queue for good: its
-- waiter is dropped as if dead, and a live one queues again.
local function sem_wanted(queue, alive, want, w)
	local n = tonumber(redis.call('hget', want, w) or '0')
	if n == nil then
		sem_dequeue(queue, alive, want, w)
		return 0
	end
	return n
end

-- sem_taken returns the permits held.
local function sem_taken(holders)
	local total = 0
	for _, v in ipairs(redis.call('hvals', holders)) do
		total = total + tonumber(string.match(v, '^%d+') or '0')
	end
	return total
end

-- sem_wake publishes on channel, with the publish command, the id of each
-- waiter whose request fits in free permits together with every request
-- queued ahead of it, in queue order, except skip (a waiter being served
-- now), and returns the ids it published.
local function sem_wake(queue, alive, want, free, publish, channel, skip)
	local woken, acc = {}, 0
	for _, w in ipairs(redis.call('zrange', queue, 0, -1)) do
		acc = acc + sem_wanted(queue, alive, want, w)
		if acc > free then
			break
		end
		if w ~= skip then
			redis.call(publish, channel, w)
			woken[#woken + 1] = w
		end
	end
	return woken
end

