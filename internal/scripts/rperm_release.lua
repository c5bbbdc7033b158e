-- rperm_release: give permits back to a semaphore in Redisson's
-- RPermitExpirableSemaphore layout, as a Java release(permitId) does.
--
-- KEYS[1]  the free permits
-- KEYS[2]  the taken permits' leases
-- KEYS[3]  the channel, on which the count is published
-- ARGV[1]  the publish command
-- ARGV[2...] the ids of the permits
--
-- Reply: how many of the permits were still taken (and are free now); a
-- permit whose lease had ended and that another call gave back counts not.
-- A repeat gives nothing back twice.
local ids = {}
for i = 2, #ARGV do
	ids[#ids + 1] = ARGV[i]
end
return giveBack(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ids)
