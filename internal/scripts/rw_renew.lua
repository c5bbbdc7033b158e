-- rw_renew: extend many RWMutex holds in one call (the watchdog's batch).
--
-- KEYS         each hold's keys in turn: its lock hash, then, for a reader,
--              the timeout keys that the caller declares (see keys_lib):
--              ARGV[4i-1]..":1" to ..":k" for k = ARGV[4i]; all keys of one
--              call share a cluster slot
-- ARGV[4i-3]   the hold's field (a reader's "<uuid>:<n>", or a writer's
--              "<uuid>:<n>:write")
-- ARGV[4i-2]   the new lease in milliseconds; 0 for a reader's fixed lease,
--              whose timeout keys keep their expiry
-- ARGV[4i-1]   for a reader, its timeout key prefix; "" for a writer
-- ARGV[4i]     how many timeout keys of the hold follow its lock in KEYS
--
-- Reply: an array with one integer per hold: 1 renewed, 0 no longer held;
-- -c when the reader holds c holds and the timeout key of one of them was
-- not declared: nothing was done for it, and the caller renews it again
-- with the keys of c holds declared. A reader is held only while its field
-- and every one of its timeout keys are there: a timeout key that expired
-- (or was deleted) may already have let a writer in, so it is a loss,
-- reported, never revived. A renewal never shortens the lock's expiry, and
-- cannot keep another client's crashed readers alive, since their timeout
-- keys are theirs. It raises the lock's expiry to the hold's lease (a fixed
-- lease: to the longest of its timeout keys), which a Redisson reader's
-- watchdog may have shortened to its own.

-- renew renews the hold field of the lock at KEYS[key] (see the reply), its
-- timeout keys being declared in at.
local function renew(key, field, lease, prefix, at)
	local count = tonumber(redis.call('hget', KEYS[key], field) or '0')
	local held = count > 0
	if held and prefix ~= '' then
		local timeouts = {}
		for j = 1, count do
			timeouts[j] = prefix .. ':' .. j
		end
		if undeclared(at, timeouts) then
			return -count
		end
		for j = 1, count do
			if redis.call('exists', KEYS[at[timeouts[j]]]) == 0 then
				held = false
			end
		end
		for j = 1, count do
			if held and lease > 0 then
				redis.call('pexpire', KEYS[at[timeouts[j]]], lease)
			elseif held then
				lease = math.max(lease, redis.call('pttl', KEYS[at[timeouts[j]]]))
			end
		end
	end
	if held and lease > 0 then
		redis.call('pexpire', KEYS[key], math.max(redis.call('pttl', KEYS[key]), lease))
	end
	if held then
		return 1
	end
	return 0
end

local renewed = {}
local key = 1
for i = 1, #ARGV / 4 do
	local k = tonumber(ARGV[4 * i])
	renewed[i] = renew(key, ARGV[4 * i - 3], tonumber(ARGV[4 * i - 2]), ARGV[4 * i - 1], declared(key + 1, key + k))
	key = key + 1 + k
end
return renewed
