-- expirable_release: give permits back to a semaphore in Redisson's
-- RPermitExpirableSemaphore layout, as a Java release(permitId) does.
--
-- KEYS[1]  the free permits
-- KEYS[2]  the taken permits' leases
-- KEYS[3]  the channel, on which the count is published
-- KEYS[4]  this release's latch: its reply, kept so that a repeat (a reply
--          lost) answers the same and gives nothing back twice
-- ARGV[1]  the publish command
-- ARGV[2]  how long the latch lasts, in milliseconds
-- ARGV[3...] each permit as two members, either of which may be the one
--          recorded: its id's 16 bytes (as redisync and recent Redisson
--          record it) and its id as text (as older Redisson 3.x did)
--
-- Reply: {held, ended}: of the permits, how many were taken with their
-- lease running, and how many were taken with their lease ended (not given
-- back yet by any call). Both go back to the count; a permit that was not
-- taken (a repeat, or a lease that ended and was given back) counts in
-- neither, nor does a permit named again in ARGV: it is given back once.
local done = redis.call('get', KEYS[4])
if done then
	local held, ended = string.match(done, '^(%d+):(%d+)$')
	return {tonumber(held), tonumber(ended)}
end
local now = serverMS()
local found, seen, ended = {}, {}, 0
for i = 3, #ARGV - 1, 2 do
	local member, ends = recorded(KEYS[2], ARGV[i], ARGV[i + 1])
	if member and not seen[member] then
		seen[member] = true
		found[#found + 1] = member
		if ends <= now then
			ended = ended + 1
		end
	end
end
local held = giveBack(KEYS[1], KEYS[2], KEYS[3], ARGV[1], found) - ended
redis.call('set', KEYS[4], held .. ':' .. ended, 'px', ARGV[2])
return {held, ended}
