-- hold_lib: what the scripts of the hash locks (Mutex, RWMutex, FairMutex,
-- Once) share about a hold's latch. A hold's final release leaves a latch
-- named by its field for a while: a repeat of that release (its reply was
-- lost) finds the latch and answers as the first did, and a late copy of the
-- hold's first acquire finds it and takes nothing.

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
