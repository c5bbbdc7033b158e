-- expirable_available: the free permits of a semaphore in Redisson's
-- RPermitExpirableSemaphore layout, after ended leases are given back (as
-- a Java availablePermits() does: a waiter on the channel hears the count).
--
-- KEYS[1..3]  as expirable_acquire's
-- ARGV[1]     the publish command
--
-- Reply: the free permits, or -1 when the count is not set yet.
local n = reclaim(KEYS[1], KEYS[2], KEYS[3], serverMS(), ARGV[1])
return n or -1
