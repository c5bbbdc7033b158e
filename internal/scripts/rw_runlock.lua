-- rw_runlock: leave a read hold; release the lock with the last hold.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the channel (Redisson's redisson_rwlock:{name})
-- KEYS[3]  the hold's latch: the lock's latch prefix, ":", ARGV[1]
-- KEYS[4...] the read timeout keys that the caller declares (see keys_lib):
--          those of this hold that the release deletes and, for a final
--          release that leaves other read holds, every timeout key of theirs
-- ARGV[1]  the read hold's field
-- ARGV[2]  the read hold count before this release
-- ARGV[3]  the read hold count after it: 0 ends the hold
-- ARGV[4]  the publish command: "publish" or "spublish"
-- ARGV[5]  the latch's lifetime in milliseconds
-- ARGV[6]  "1" to leave the latch even when the hold is not there (the undo
--          of an acquire of unknown outcome)
-- ARGV[7]  the prefix of every holder's timeout keys: "{name}"; those of the
--          hold field with c holds are ARGV[7]..":"..field..":rwlock_timeout:1"
--          to ..":c"
-- ARGV[8]  "1" to settle: release even when the timeout keys of other holds
--          are not all declared, and leave the lock's expiry as it is (the
--          last attempt of a call whose earlier ones asked; see below)
--
-- Reply: 1 the hold is gone by this release (or a repeat of it); 0 it is
--        still held; nil it was not there; {'keys', name...} when a timeout
--        key it needs was not declared (see keys_lib): it changed nothing.
--
-- After the hold's end, the lock's expiry becomes the longest remaining read
-- lease (as Redisson computes it), so the holds of crashed readers end with
-- their own leases; with no live hold left the lock is deleted and "1" is
-- published so that every waiter, reader or writer, re-checks at once. The
-- final release latches the field, as mutex_release does.
--
-- That needs the timeout keys of every other hold, which the caller learns
-- from the script's asking replies. When read holds begin faster than a
-- round trip, each attempt finds new ones, and the caller's last attempt
-- settles (ARGV[8]): the release is done, and the lock keeps the expiry it
-- had. Every read acquire raised that to at least its own lease, so the
-- lock may outlive the longest remaining read lease (should every reader
-- left die, writers wait until then), where Redisson would have shortened
-- it; the next release that sees every hold sets it as Redisson does.
local cur = redis.call('hget', KEYS[1], ARGV[1])
if not cur then
	if releasedBefore(KEYS[3], ARGV[6], ARGV[5]) then
		return 1
	end
	return nil
end
cur = tonumber(cur)
local m = tonumber(ARGV[3])
local mode = redis.call('hget', KEYS[1], 'mode')

-- timeout names field's i-th timeout key.
local function timeout(field, i)
	return ARGV[7] .. ':' .. field .. ':rwlock_timeout:' .. i
end

-- The timeout keys the release touches, before it writes anything: the
-- hold's that it deletes, and, when it ends the hold and leaves other holds
-- in a read lock, every other hold's, whose longest remaining lease becomes
-- the lock's expiry (Redisson's unlock reads them all, write holds' too).
local own, others = {}, {}
if m > 0 then
	if cur == tonumber(ARGV[2]) then
		for i = cur, m + 1, -1 do
			own[#own + 1] = timeout(ARGV[1], i)
		end
	end
else
	for i = cur, 1, -1 do
		own[#own + 1] = timeout(ARGV[1], i)
	end
	if mode ~= 'write' and redis.call('hlen', KEYS[1]) > 2 then
		for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
			local count = field ~= ARGV[1] and tonumber(redis.call('hget', KEYS[1], field))
			if count then
				for i = count, 1, -1 do
					others[#others + 1] = timeout(field, i)
				end
			end
		end
	end
end
local at = declared(4)
local everyone = not undeclared(at, others)
if undeclared(at, own) or not everyone and ARGV[8] ~= '1' then
	local needed = {}
	for _, names in ipairs({own, others}) do
		for _, name in ipairs(names) do
			needed[#needed + 1] = name
		end
	end
	return ask(needed)
end

for _, name in ipairs(own) do
	redis.call('del', KEYS[at[name]])
end
if m > 0 then
	if cur == tonumber(ARGV[2]) then
		redis.call('hset', KEYS[1], ARGV[1], m)
	end
	return 0
end
redis.call('hdel', KEYS[1], ARGV[1])
redis.call('set', KEYS[3], '1', 'px', ARGV[5])
if redis.call('hlen', KEYS[1]) > 1 then
	if mode == 'write' then
		return 1 -- a writer that took reads (downgrade) keeps its lease
	end
	if not everyone then
		return 1 -- settled: the expiry stays (see ARGV[8])
	end
	local longest = -3
	for _, name in ipairs(others) do
		longest = math.max(longest, redis.call('pttl', KEYS[at[name]]))
	end
	if longest > 0 then
		redis.call('pexpire', KEYS[1], longest)
		return 1
	end
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], '1')
return 1
