-- once_release: end a claim on a Once, recording whether its function
-- succeeded, and wake the callers waiting for it.
--
-- KEYS[1]  the claim hash
-- KEYS[2]  the channel of claim ends
-- KEYS[3]  the hold's latch: the claims' latch prefix, ":", ARGV[1]
-- KEYS[4]  the completion marker
-- ARGV[1]  the hold's field
-- ARGV[2], ARGV[3]  the count before and after: always 1 and 0 (a claim is
--          never re-entered); kept for the shape the hash releases share
-- ARGV[4]  the publish command: "publish", or "spublish" on Redis Cluster
-- ARGV[5]  the latch's lifetime in milliseconds
-- ARGV[6]  "1" to leave the latch even when the claim is not there (the undo
--          of a claim of unknown outcome)
-- ARGV[7]  "1" when the function succeeded
--
-- Reply: 1 released (or released already: the latch is there); nil when the
--        claim was not there (its lease ran out, or it was deleted).
--
-- Success is recorded even when the claim is gone: the function did succeed,
-- and a caller that claimed after the lease ran out finds the Once done at its
-- next attempt. Every end publishes: "1" (done, waiters return) or "0" (the
-- next waiter claims).
local succeeded = ARGV[7] == '1'
local latch = KEYS[3]
if succeeded then
	redis.call('set', KEYS[4], ARGV[1])
end
local message = succeeded and '1' or '0'
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
	if succeeded then
		redis.call(ARGV[4], KEYS[2], message)
	end
	if releasedBefore(latch, ARGV[6], ARGV[5]) then
		return 1
	end
	return nil
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], message)
redis.call('set', latch, '1', 'px', ARGV[5])
return 1
