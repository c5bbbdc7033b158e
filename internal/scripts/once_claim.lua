-- once_claim: claim the right to run a Once's function, unless it has run.
--
-- KEYS[1]  the claim: a hash of one field, the running caller's hold
-- KEYS[2]  the hold's latch: the claims' latch prefix, ":", ARGV[2] (see
--          once_release)
-- KEYS[3]  the completion marker, present once the function has succeeded
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  the hold's field: its identity, fresh for each claim
--
-- Reply: -5 when the function has already succeeded (nothing to claim);
--        nil when this hold has the claim now (or had it already: an earlier
--        attempt of this same call took it);
--        -4 when the hold's latch is there: its call gave up and released
--        what it might have taken, so this late copy takes nothing;
--        otherwise the claim's PTTL in milliseconds (-1: no expiry).
--
-- A claim is never re-entered: its count stays 1, the shape of a Mutex hash,
-- so that mutex_renew renews it and mutex_force_unlock deletes it.
if redis.call('exists', KEYS[3]) == 1 then
	return -5
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
	redis.call('pexpire', KEYS[1], ARGV[1])
	return nil
end
return takeFree(KEYS[1], ARGV[2], KEYS[2], ARGV[1])
