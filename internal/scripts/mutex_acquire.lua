-- mutex_acquire: take or re-enter a Redisson-compatible reentrant lock.
--
-- KEYS[1]  the lock: a hash of one field "<client-uuid>:<owner>" = hold count
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  the owner's field
-- ARGV[3]  the hold count the owner has after this acquire (1 for a first hold)
--
-- Reply: nil when the owner holds the lock now with ARGV[3] holds;
--        -3 when ARGV[3] > 1 (a re-entry) but the owner's hold is gone (lost);
--        otherwise the lock's PTTL in milliseconds (-1: the key has no expiry).
--
-- The count is set, not incremented, so the call is idempotent: repeating it
-- after a lost reply cannot inflate the count. A first hold (ARGV[3] = 1) also
-- takes a field that is already there, because only this owner can have written
-- it, by an earlier attempt of this same acquire.
local held = redis.call('hexists', KEYS[1], ARGV[2]) == 1
if not held then
	if tonumber(ARGV[3]) > 1 then
		return -3
	end
	if redis.call('exists', KEYS[1]) == 1 then
		return redis.call('pttl', KEYS[1])
	end
end
redis.call('hset', KEYS[1], ARGV[2], ARGV[3])
redis.call('pexpire', KEYS[1], ARGV[1])
return nil
