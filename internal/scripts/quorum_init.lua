-- quorum_init: mark a server of a new quorum, which votes at once.
--
-- KEYS[1]  the server's quorum marker (see quorum_lib)
--
-- Reply: 1 when the marker was written now, 0 when the server had one.
--
-- The Client writes it on the servers without a marker when it finds a
-- majority of the quorum without one: under the assumption that a majority
-- keeps its data, no hold can then exist, and the servers start voting at
-- once. A server found without a marker otherwise is one that restarted
-- empty, and the scripts mark it so (quorum_lib).
if redis.call('hsetnx', KEYS[1], 'from', '0') == 0 then
	return 0
end
redis.call('hset', KEYS[1], 'restarted', '0')
return 1
