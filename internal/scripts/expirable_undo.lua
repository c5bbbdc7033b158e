-- expirable_undo: a call that gave up after an attempt of unknown outcome gives
-- back what that attempt may have taken, and latches the call so that a late
-- copy of the attempt takes nothing.
--
-- KEYS[1..4]  as expirable_acquire's
-- ARGV[1]     the publish command
-- ARGV[2]     how long the latch lasts, in milliseconds
-- ARGV[3...]  the ids of the permits the call asked for
--
-- Reply: how many permits it gave back.
local ids = {}
for i = 3, #ARGV do
	ids[#ids + 1] = ARGV[i]
end
redis.call('set', KEYS[4], '0', 'px', ARGV[2])
return giveBack(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ids)
