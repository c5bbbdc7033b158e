-- multi_renew: extend many MultiMutex leases in one call (the watchdog's
-- batch). A lease covers several locks, all of which it must still hold.
--
-- KEYS        the locks of each lease in turn; all keys of one call share a
--             cluster slot
-- ARGV        three per lease: the hold's field, the new lease in
--             milliseconds, how many of KEYS are its locks
--
-- Reply: an array with one integer per lease: 1 renewed, 0 the hold is
-- missing from one of its locks (expired, deleted or taken), which the caller
-- reports as a loss; the others are then left to expire.
local renewed = {}
local k = 1
for a = 1, #ARGV, 3 do
	local field, n = ARGV[a], tonumber(ARGV[a + 2])
	local all = 1
	for i = k, k + n - 1 do
		if redis.call('hexists', KEYS[i], field) == 0 then
			all = 0
		end
	end
	if all == 1 then
		for i = k, k + n - 1 do
			redis.call('pexpire', KEYS[i], ARGV[a + 1])
		end
	end
	renewed[#renewed + 1] = all
	k = k + n
end
return renewed
