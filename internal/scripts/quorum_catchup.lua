-- quorum_catchup: bring the token counters of a quorum server that
-- restarted empty up to what a majority of the others keep, one batch at a
-- time, and mark it caught up with the last. (keeps is quorum_lib's.)
--
-- KEYS[1]     the server's quorum marker (see quorum_lib)
-- KEYS[2...]  token counters
-- ARGV[1]     the marker's "from" when the catch-up began: the server's
--             incarnation (a restart since writes another marker)
-- ARGV[2]     "1" for the last batch: mark the server caught up
-- ARGV[3...]  the counters' values, one per KEYS[2...]: the highest that
--             the others keep, as decimal integers
--
-- Reply: 1 applied; 0 the marker is not the one the catch-up began with
--        (the server restarted again, or no longer needs it): nothing
--        changed.
--
-- A counter only rises: a token written here meanwhile, higher, stays.
local marker = KEYS[1]
if redis.call('hget', marker, 'from') ~= ARGV[1] or keeps(marker) then
	return 0
end
for i = 2, #KEYS do
	local cur = tonumber(redis.call('get', KEYS[i]) or '-1')
	if cur < tonumber(ARGV[i + 1]) then
		redis.call('set', KEYS[i], ARGV[i + 1])
	end
end
if ARGV[2] == '1' then
	redis.call('hset', marker, 'caught', '1')
end
return 1
