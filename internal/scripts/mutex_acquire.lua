-- mutex_acquire: take or re-enter a Redisson-compatible reentrant lock.
--
-- KEYS[1]  the lock: a hash of one field "<client-uuid>:<n>" = hold count
-- KEYS[2]  the hold's latch: the lock's latch prefix, ":", ARGV[2] (see
--          mutex_release)
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  the hold's field: its identity, fresh for each hold
-- ARGV[3]  the hold count before this acquire: 0 for a first acquire
--
-- Reply: nil when the hold has ARGV[3] + 1 holds now (or its field was there:
--        an earlier attempt of this same call, or of this re-entry, took it);
--        -3 when a re-entry (ARGV[3] > 0) finds the hold gone (lost);
--        -4 when a first acquire finds its hold's latch: the call that sent
--        it gave up and released what it might have taken, and this is a
--        copy that arrived late, so it must take nothing;
--        otherwise the lock's PTTL in milliseconds (-1: the key has no expiry).
--
-- A field names one hold, so a command of an earlier hold of the same owner
-- can never act on a later one. The count is compare-and-set: a repeat, or a
-- late copy, of an acquire whose count is no longer the one it expects
-- changes nothing. An uncontended first acquire runs three commands (EXISTS
-- of the lock and the latch, HSET, PEXPIRE), a busy one three (EXISTS, PTTL,
-- HEXISTS).
local lock, field, expect = KEYS[1], ARGV[2], tonumber(ARGV[3])
if expect > 0 then
	local cur = redis.call('hget', lock, field)
	if not cur then
		return -3
	end
	if tonumber(cur) == expect then
		redis.call('hset', lock, field, expect + 1)
	end
	redis.call('pexpire', lock, ARGV[1])
	return nil
end
-- A first acquire: one EXISTS of the lock and of the field's latch says, in
-- the usual case, that the lock is free and this is no late copy.
local latch = KEYS[2]
if redis.call('exists', lock, latch) == 0 then
	redis.call('hset', lock, field, 1)
	redis.call('pexpire', lock, ARGV[1])
	return nil
end
local pttl = redis.call('pttl', lock)
if pttl == -2 then
	return -4 -- the lock is free, and the field's latch is there
end
if redis.call('hexists', lock, field) == 0 then
	return pttl
end
redis.call('pexpire', lock, ARGV[1]) -- an earlier attempt of this call took it
return nil
