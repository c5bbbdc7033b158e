-- quorum_lib: what the scripts of a quorum lock share: whether this server
-- votes, and what its token counter is worth. (serverMS is queue_lib's,
-- which comes first.)
--
-- A quorum lock is held on a majority of N independent servers. A server
-- that restarted empty has lost the holds it granted, and a holder's
-- majority that counted it may now be a minority: until every lease it could
-- have granted has run out, it must not vote. Each server keeps a marker
-- (one key, no expiry, written by the first script that finds it missing or
-- by the Client's first contact with a new quorum): a hash of "from", the
-- server time (ms) from which it votes, and "restarted", "1" when the marker
-- was written on a server found without one (an empty server, after a
-- restart or a flush) and "0" when a new quorum was set up. A restart takes
-- the marker with it, so the server itself tells.
--
-- A restarted server also lost its token counters. Each is unknown there
-- until a token is written to it, or until a Client has brought every
-- counter up from a majority of the servers that kept theirs
-- (quorum_catchup), which marks it "caught" = "1": from then on a counter it
-- does not have is one no token was issued for. So the next server to
-- restart empty leaves every latest token on a majority that knows it.

-- votes reports whether the server votes now, creating the marker of a
-- restarted server (which votes bound ms from now) when it is missing, and
-- how many ms are left before it does (0 when it votes).
local function votes(marker, bound)
	local from = redis.call('hget', marker, 'from')
	local now = serverMS()
	if not from then
		redis.call('hset', marker, 'from', now + tonumber(bound), 'restarted', '1')
		return false, tonumber(bound)
	end
	local left = tonumber(from) - now
	if left > 0 then
		return false, left
	end
	return true, 0
end

-- keeps reports whether the server can tell its token counters: it never
-- lost its data (since the quorum was set up), or it was caught up since.
local function keeps(marker)
	local m = redis.call('hmget', marker, 'restarted', 'caught')
	return m[1] == '0' or m[2] == '1'
end

-- counterOf returns the lock's token counter on this server, or -1 when
-- the server cannot tell it: it restarted empty, and neither a token nor a
-- catch-up was written to it since (a counter it does not have is 0 on a
-- server that keeps its counters).
local function counterOf(counter, marker)
	local n = redis.call('get', counter)
	if n then
		return tonumber(n)
	end
	if keeps(marker) then
		return 0
	end
	return -1
end
