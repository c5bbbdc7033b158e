-- hold_lib: what the scripts of the hash locks (Mutex, RWMutex, FairMutex,
-- Once) share about a hold's latch. A hold's final release leaves a latch
-- named by its field for a while: a repeat of that release (its reply was
-- lost) finds the latch and answers as the first did, and a late copy of the
-- hold's first acquire finds it and takes nothing. The latch is the key
-- "<the lock's latch prefix>:<field>", which each script is given in KEYS.

-- releasedBefore answers for a release whose hold is not in the lock: true
-- when the hold's latch is there (the hold was released, this is a repeat),
-- false otherwise (the hold is lost). With undo = "1" (the undo of an acquire
-- of unknown outcome) it then leaves the latch for ms milliseconds, so that a
-- late copy of that acquire takes nothing.
local function releasedBefore(latch, undo, ms)
	if redis.call('exists', latch) == 1 then
		return true
	end
	if undo == '1' then
		redis.call('set', latch, '1', 'px', ms)
	end
	return false
end

-- takeFree gives the hash lock to a first acquire of field, unless the lock
-- is taken (reply: its PTTL) or the field's latch is there (reply -4: a late
-- copy of an acquire that was undone). Taken, the reply is nil.
local function takeFree(lock, field, fieldLatch, lease)
	if redis.call('exists', lock) == 1 then
		return redis.call('pttl', lock)
	end
	if redis.call('exists', fieldLatch) == 1 then
		return -4
	end
	redis.call('hset', lock, field, 1)
	redis.call('pexpire', lock, lease)
	return nil
end

-- releaseHold releases one hold of field in the hash lock, its count going
-- from "from" to "to" (compare-and-set; 0 deletes the lock and leaves the
-- field's latch for latchMS), and answers a queued lock's release: {1, woken}
-- released (or a repeat of the release), {0, ''} still held, {-1, woken} the
-- hold is not there. wake wakes the next waiter of a free lock and returns
-- its id; a release that finds its hold gone calls it only when mayWake (the
-- caller left the head of the queue, or queued nothing).
local function releaseHold(lock, field, latch, from, to, undo, latchMS, wake, mayWake)
	if redis.call('hexists', lock, field) == 0 then
		if releasedBefore(latch, undo, latchMS) then
			return {1, ''}
		end
		if mayWake then
			return {-1, wake()}
		end
		return {-1, ''}
	end
	if tonumber(to) > 0 then
		if redis.call('hget', lock, field) == from then
			redis.call('hset', lock, field, to)
		end
		return {0, ''}
	end
	redis.call('del', lock)
	redis.call('set', latch, '1', 'px', latchMS)
	return {1, wake()}
end
