-- quorum_renew: extend one server's part of a quorum hold, or add this
-- server to it. (serverMS is queue_lib's; votes quorum_lib's.)
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the prefix of the lock's latch keys
-- KEYS[3]  the server's quorum marker
-- ARGV[1]  the hold's field
-- ARGV[2]  the hold count
-- ARGV[3]  the new lease in milliseconds
-- ARGV[4]  how long a server found without its marker stays out (as in
--          quorum_acquire)
--
-- Reply: 1 renewed (or added), 0 the hold is not here and cannot be.
--
-- A server where the hold is missing (it did not answer the acquire in time,
-- or it restarted empty and votes again) is added to the hold when the lock
-- is free there, it votes, and the hold was never released here (its latch):
-- a holder of a majority only grows it, so that a later loss of one of its
-- servers costs it less.
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
	redis.call('pexpire', KEYS[1], ARGV[3])
	return 1
end
if not votes(KEYS[3], ARGV[4]) or redis.call('exists', KEYS[1]) == 1 or
	redis.call('exists', KEYS[2] .. ':' .. ARGV[1]) == 1 then
	return 0
end
redis.call('hset', KEYS[1], ARGV[1], ARGV[2])
redis.call('pexpire', KEYS[1], ARGV[3])
return 1
