-- rfair_lib: Redisson's RFairLock queue as the scripts of a FairMutex in its
-- layout see it: a list of waiter ids in arrival order, and a sorted set of
-- their eviction times in milliseconds. Redisson scores a waiter by the time
-- its turn is predicted to come plus its fairLockWaitTimeout ("wait"), and
-- lowers every waiter's time by wait at each fresh acquisition, since each
-- moves a place up; only the head of the queue is ever evicted.

-- reapStale takes out of the queue the heads whose eviction time is at or
-- before now, as Redisson's scripts do; a head without a time stays.
local function reapStale(queue, timeouts, now)
	while true do
		local head = redis.call('lindex', queue, 0)
		if not head then
			return
		end
		local t = redis.call('zscore', timeouts, head)
		if not t or tonumber(t) > now then
			return
		end
		redis.call('zrem', timeouts, head)
		redis.call('lpop', queue)
	end
end

-- lower moves the eviction times of the waiters ids (those with one) wait ms
-- sooner.
local function lower(timeouts, ids, wait)
	for _, w in ipairs(ids) do
		if redis.call('zscore', timeouts, w) then
			redis.call('zincrby', timeouts, -wait, w)
		end
	end
end

-- leave takes the waiter id out of the queue; the waiters behind it have
-- their times lowered by wait, as a Java waiter's giving up does.
local function leave(queue, timeouts, id, wait)
	redis.call('zrem', timeouts, id)
	local pos = redis.call('lpos', queue, id)
	if pos then
		lower(timeouts, redis.call('lrange', queue, pos + 1, -1), wait)
		redis.call('lrem', queue, 0, id)
	end
end

-- wakeHead publishes Redisson's unlock message, "0", on the channel of the
-- waiter at the head of the queue when the lock is free, and returns the
-- waiter's id ("" for none).
local function wakeHead(lock, queue, timeouts, channel, publish, now)
	reapStale(queue, timeouts, now)
	if redis.call('exists', lock) == 1 then
		return ''
	end
	local head = redis.call('lindex', queue, 0)
	if not head then
		return ''
	end
	redis.call(publish, channel .. ':' .. head, '0')
	return head
end
