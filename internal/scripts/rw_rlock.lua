-- rw_rlock: take or re-enter a read hold of a Redisson-compatible RWMutex.
--
-- KEYS[1]  the lock: a hash with "mode" = "read" | "write", reader fields
--          "<uuid>:<n>" = hold count, writer field "<uuid>:<n>:write"
-- KEYS[2]  waiting writers: a sorted set of writer ids scored by the server
--          time (ms) at which each stops counting unless it tries again
-- KEYS[3]  the hold's latch: the lock's latch prefix, ":", ARGV[2] (see
--          rw_runlock)
-- KEYS[4...] the hold's read timeout keys that the caller declares (see
--          keys_lib): ARGV[6]..":1" to ARGV[6]..":c" for the c holds it
--          expects the hold to have after the call
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  the read hold's field: its identity, fresh for each hold
-- ARGV[3]  the write field of the caller's owner's write hold, which it may
--          read under (a downgrade), or "" when it has none or may not
-- ARGV[4]  the read hold count before this acquire: 0 for a first acquire
-- ARGV[5]  "1" if the owner may pass waiting writers (an explicit owner
--          re-entering its read lock), "0" otherwise
-- ARGV[6]  this hold's read timeout key prefix,
--          "{name}:<uuid>:<n>:rwlock_timeout"; with c holds, the keys
--          prefix..":1" to prefix..":c" exist, each with the hold's lease as
--          its expiry (Redisson's layout)
--
-- Reply: nil when the read hold has ARGV[4] + 1 holds now (or its field was
--        there: an earlier attempt of the same call took it); -3 when a
--        re-entry finds the hold gone (lost); -4 when a first acquire finds
--        its hold's latch (a late copy of an acquire its caller undid);
--        otherwise how long to wait in milliseconds (the lock's PTTL, or the
--        time until a waiting writer's claim lapses); {'keys', name...}
--        when a timeout key it needs was not declared (see keys_lib): it
--        changed nothing.
--
-- Every timeout key of the hold gets the new lease together: a hold is one
-- lease, however many times it was entered; a hold one of whose keys ran out
-- is lost (-3), not revived. The count is compare-and-set.
local expect = tonumber(ARGV[4])
local lease = tonumber(ARGV[1])
local cur = redis.call('hget', KEYS[1], ARGV[2])

-- The timeout keys the call may touch, before it writes anything: those of
-- as many holds as the hold will have (none when a re-entry finds it gone).
local holds = 1
if cur then
	holds = tonumber(cur)
	if holds == expect and expect > 0 then
		holds = holds + 1
	end
elseif expect > 0 then
	holds = 0
end
local needed = {}
for i = 1, holds do
	needed[i] = ARGV[6] .. ':' .. i
end
local at = declared(4)
if undeclared(at, needed) then
	return ask(needed)
end

-- extend gives each of the hold's count timeout keys the new lease; from is
-- the first one that may not exist yet. It reports false when an older one
-- is gone: the hold ran out (a writer may have entered since), which a new
-- lease must not hide.
local function extend(from, count)
	for i = 1, from - 1 do
		if redis.call('exists', KEYS[at[needed[i]]]) == 0 then
			return false
		end
	end
	for i = 1, count do
		redis.call('set', KEYS[at[needed[i]]], 1, 'px', lease)
	end
	redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), lease))
	return true
end

-- How long a new reader waits for a write hold or a waiting writer, or nil
-- when it may enter.
local function blocked()
	local mode = redis.call('hget', KEYS[1], 'mode')
	local writer = ARGV[3] ~= '' and redis.call('hexists', KEYS[1], ARGV[3]) == 1
	if mode == 'write' and not writer then
		return redis.call('pttl', KEYS[1])
	end
	if writer or ARGV[5] == '1' then
		return nil
	end
	local now = redis.call('time')
	local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
	redis.call('zremrangebyscore', KEYS[2], '-inf', ms)
	local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
	if first[2] then
		local lapse = tonumber(first[2]) - ms
		local pttl = redis.call('pttl', KEYS[1])
		if pttl > 0 then
			return math.min(pttl, lapse)
		end
		return lapse
	end
	return nil
end

if cur then
	cur = tonumber(cur)
	if cur == expect and expect > 0 then
		local wait = blocked()
		if wait then
			return wait
		end
		if not extend(cur + 1, cur + 1) then
			return -3
		end
		redis.call('hset', KEYS[1], ARGV[2], cur + 1)
		return nil
	end
	if not extend(cur + 1, cur) then
		return -3
	end
	return nil
end
if expect > 0 then
	return -3
end
local wait = blocked()
if wait then
	return wait
end
if redis.call('exists', KEYS[3]) == 1 then
	return -4
end
if redis.call('hget', KEYS[1], 'mode') == false then
	redis.call('hset', KEYS[1], 'mode', 'read')
end
redis.call('hset', KEYS[1], ARGV[2], 1)
extend(1, 1)
return nil
