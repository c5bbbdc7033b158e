-- election_campaign: become an Election's leader with a value, unless another
-- campaigner is the leader.
--
-- KEYS[1]  the leadership: a hash whose hold field is the leader's (count 1,
--          the shape of a Mutex hash, so that mutex_renew renews it,
--          mutex_release ends it and mutex_force_unlock deletes it), with the
--          fields "value" (the leader's value) and "rev" (the number of its
--          latest proclamation, 1 for the campaign; see election_proclaim)
-- KEYS[2]  the hold's latch: the leaderships' latch prefix, ":", ARGV[2]
--          (see mutex_release)
-- KEYS[3]  the channel of changes
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  the hold's field: its identity, fresh for each leadership
-- ARGV[3]  the value
-- ARGV[4]  the publish command: "publish", or "spublish" on Redis Cluster
--
-- Reply: nil when this hold leads now (or led already: an earlier attempt of
--        this same call won, and its value stands);
--        -4 when the hold's latch is there: its call gave up and released
--        what it might have taken, so this late copy takes nothing;
--        otherwise the leadership's PTTL in milliseconds (-1: no expiry).
--
-- A win publishes "1", so that observers read the new leader's value.
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
	redis.call('pexpire', KEYS[1], ARGV[1])
	return nil
end
local busy = takeFree(KEYS[1], ARGV[2], KEYS[2], ARGV[1])
if busy then
	return busy
end
redis.call('hset', KEYS[1], 'value', ARGV[3], 'rev', 1)
redis.call(ARGV[4], KEYS[3], '1')
return nil
