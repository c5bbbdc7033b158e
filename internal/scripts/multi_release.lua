-- multi_release: release several locks held as one hold (multi_acquire),
-- and wake each one's waiters.
--
-- KEYS[3i-2]  the i-th lock hash
-- KEYS[3i-1]  its unlock channel (Redisson's redisson_lock__channel:{name})
-- KEYS[3i]    the hold's latch in it: its latch prefix, ":", ARGV[1]
-- ARGV[1]     the hold's field
-- ARGV[2], ARGV[3]  the count before and after: always 1 and 0 (the hold is
--             never re-entered); kept for the shape the hash releases share
-- ARGV[4]     the publish command: "publish", or "spublish" on Redis Cluster
-- ARGV[5]     the latches' lifetime in milliseconds
-- ARGV[6]     "1" to leave the latches even when the hold is in no lock (the
--             undo of an acquire of unknown outcome)
--
-- Reply: 1 released: every lock deleted and "0" (Redisson's unlock message)
--        published on its channel; nil when the hold was missing from some
--        lock (lost: expired, deleted or taken over), after releasing the
--        locks it still had. A repeat (the reply was lost) finds the latches
--        and answers as the first did: each latch records "1" or "0".
local n = #KEYS / 3
local held = 0
for i = 1, n do
	held = held + redis.call('hexists', KEYS[3 * i - 2], ARGV[1])
end
if held == 0 then
	local first = redis.call('get', KEYS[3])
	if first == '1' then
		return 1
	end
	if first == false and ARGV[6] == '1' then
		for i = 1, n do
			redis.call('set', KEYS[3 * i], '0', 'px', ARGV[5])
		end
	end
	return nil
end
local all = '0'
if held == n then
	all = '1'
end
for i = 1, n do
	local lock = KEYS[3 * i - 2]
	if redis.call('hexists', lock, ARGV[1]) == 1 then
		redis.call('del', lock)
		redis.call(ARGV[4], KEYS[3 * i - 1], '0')
	end
	redis.call('set', KEYS[3 * i], all, 'px', ARGV[5])
end
if held < n then
	return nil
end
return 1
