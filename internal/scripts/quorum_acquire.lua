-- quorum_acquire: one server's vote for a quorum lock, and its token
-- counter. (serverMS is queue_lib's; votes and counterOf quorum_lib's.)
--
-- KEYS[1]  the lock: a hash of one field "<client-uuid>:<n>" = hold count
--          (the Mutex layout, on each server)
-- KEYS[2]  the hold's latch: the lock's latch prefix, ":", ARGV[2] (see
--          mutex_release)
-- KEYS[3]  the lock's token counter (a FencedMutex's)
-- KEYS[4]  the server's quorum marker (see quorum_lib)
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  the hold's field: its identity, fresh for each hold
-- ARGV[3]  the hold count before this acquire: 0 for a first acquire
-- ARGV[4]  how long (ms) a server found without its marker stays out: the
--          longest lease any client of the quorum uses, and the drift
--
-- Reply: {status, value, counter, keeps}: status 1 when the hold has ARGV[3] + 1
--        holds here now (value 0), or had them (an earlier attempt of this
--        call took it); 0 when another holds the lock here (value: its
--        PTTL, -1 without expiry); -3 when a re-entry finds the hold gone;
--        -4 when a first acquire finds its field's latch (a late copy of an
--        attempt that was undone); -5 when this server does not vote (value:
--        ms before it does). counter is the lock's token counter here, -1
--        when the server cannot tell it (see counterOf); keeps is 1 when the
--        server can tell every counter, 0 when it restarted empty and waits
--        for a Client to bring its counters up (quorum_catchup).
--
-- A vote is the Mutex's acquire on this server: the same hold identity,
-- the same compare-and-set count, the same latch. The counter rides along so
-- that a FencedMutex reads a majority's highest in the acquire's round trip.
local lock, field, expect = KEYS[1], ARGV[2], tonumber(ARGV[3])
local ok, left = votes(KEYS[4], ARGV[4])
-- (tokens, not counter: the test of the scripts' keys reads a name as one
-- variable wherever it is, and counterOf's parameter is called counter.)
local tokens = counterOf(KEYS[3], KEYS[4])
local kept = 0
if keeps(KEYS[4]) then
	kept = 1
end
if not ok then
	return {-5, left, tokens, kept}
end
if expect > 0 then
	local cur = redis.call('hget', lock, field)
	if not cur then
		return {-3, 0, tokens, kept}
	end
	if tonumber(cur) == expect then
		redis.call('hset', lock, field, expect + 1)
	end
	redis.call('pexpire', lock, ARGV[1])
	return {1, 0, tokens, kept}
end
if redis.call('hexists', lock, field) == 1 then
	redis.call('pexpire', lock, ARGV[1]) -- an earlier attempt of this call took it
	return {1, 0, tokens, kept}
end
if redis.call('exists', lock) == 1 then
	return {0, redis.call('pttl', lock), tokens, kept}
end
if redis.call('exists', KEYS[2]) == 1 then
	return {-4, 0, tokens, kept}
end
redis.call('hset', lock, field, 1)
redis.call('pexpire', lock, ARGV[1])
return {1, 0, tokens, kept}
