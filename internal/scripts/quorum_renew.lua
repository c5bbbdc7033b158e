-- quorum_renew: extend one server's part of a quorum hold.
--
-- KEYS[1]  the lock hash
-- ARGV[1]  the hold's field
-- ARGV[2]  the new lease in milliseconds
--
-- Reply: 1 renewed, 0 the hold is not here.
--
-- A server where the hold is missing (it did not answer the acquire in time,
-- it restarted empty, the hold expired or was deleted there) is not given it
-- back: a holder paused past its validity, or one whose lock was force-
-- unlocked, must hear of the loss once a majority says so, not win the lock
-- again unnoticed. (Redlock's extension, without redsync's SetNXOnExtend.)
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
	redis.call('pexpire', KEYS[1], ARGV[2])
	return 1
end
return 0
