-- mutex_acquire: take or re-enter a Redisson-compatible reentrant lock.
--
-- KEYS[1]  the lock: a hash of one field "<client-uuid>:<n>" = hold count
-- KEYS[2]  the prefix of the lock's latch keys (see mutex_release)
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
-- changes nothing.
local expect = tonumber(ARGV[3])
local cur = redis.call('hget', KEYS[1], ARGV[2])
if cur then
	if tonumber(cur) == expect then
		redis.call('hset', KEYS[1], ARGV[2], expect + 1)
	end
	redis.call('pexpire', KEYS[1], ARGV[1])
	return nil
end
if expect > 0 then
	return -3
end
return takeFree(KEYS[1], ARGV[2], KEYS[2] .. ':' .. ARGV[2], ARGV[1])
