-- quorum_token: raise one server's token counter of a quorum lock.
-- (serverMS is queue_lib's; votes and counterOf quorum_lib's.)
--
-- KEYS[1]  the lock's token counter
-- KEYS[2]  the server's quorum marker
-- ARGV[1]  the value: a token granted (the highest counter read from a
--          majority, plus one), or the highest read, to bring a server that
--          restarted empty up to date
-- ARGV[2]  how long a server found without its marker stays out (as in
--          quorum_acquire)
--
-- Reply: the counter here after the call.
--
-- The counter only rises: a late or repeated write changes nothing. Any
-- value written is at least every token granted before it was read, so a
-- server that could not tell its counter (see counterOf) can from then on.
votes(KEYS[2], ARGV[2]) -- a missing marker is written: the server restarted
local n = math.max(counterOf(KEYS[1], KEYS[2]), tonumber(ARGV[1]))
redis.call('set', KEYS[1], n)
return n
