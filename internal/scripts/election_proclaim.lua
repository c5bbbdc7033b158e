-- election_proclaim: change the leader's value, if the hold is the leader,
-- unless a later proclamation of the same leadership has landed first.
--
-- KEYS[1]  the leadership hash (see election_campaign)
-- KEYS[2]  the channel of changes
-- ARGV[1]  the hold's field
-- ARGV[2]  the new value
-- ARGV[3]  the proclamation's number in its leadership: the campaign's is 1,
--          each later one's is higher than the one before
-- ARGV[4]  the publish command: "publish", or "spublish" on Redis Cluster
--
-- Reply: 1 the value is proclaimed (or already was: a repeat);
--        0 the hold does not lead (its lease ran out, it was deleted, or it
--        resigned) and nothing changed;
--        -1 a later proclamation of the leadership is there, and this late
--        one (its caller gave up, or its connection was overtaken) changed
--        nothing.
--
-- The field names one leadership, so a late proclamation of an earlier one
-- of the same handle can never change a later one's value.
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
	return 0
end
local rev = tonumber(redis.call('hget', KEYS[1], 'rev'))
local n = tonumber(ARGV[3])
if rev == n then
	return 1
end
if rev > n then
	return -1
end
redis.call('hset', KEYS[1], 'value', ARGV[2], 'rev', n)
redis.call(ARGV[4], KEYS[2], '2')
return 1
