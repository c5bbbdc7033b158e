-- expirable_renew: set a taken permit's lease to end lease milliseconds from
-- now, as a Java updateLeaseTime(permitId, ...) does. Ended leases are
-- given back first, as in every Redisson call: a permit whose lease ended
-- is not renewed.
--
-- KEYS[1..3]  as expirable_acquire's
-- ARGV[1]     the publish command
-- ARGV[2]     the new lease in milliseconds, or -1 for none
-- ARGV[3..4]  the permit as two members, as expirable_release takes them
--
-- Reply: 1 renewed; 0 the permit is not taken (its lease ended, or it was
-- given back). A repeat renews again from its own now: harmless.
local now = serverMS()
reclaim(KEYS[1], KEYS[2], KEYS[3], now, ARGV[1])
local member = recorded(KEYS[2], ARGV[3], ARGV[4])
if not member then
	return 0
end
local lease = tonumber(ARGV[2])
local ends = 922337203685477
if lease >= 0 then
	ends = now + lease
end
redis.call('zadd', KEYS[2], ends, member)
return 1
