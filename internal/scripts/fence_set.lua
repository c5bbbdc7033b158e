-- fence_set: store a value for a fenced resource unless the writer's token is
-- older than one the resource has already seen.
--
-- KEYS[1]  the resource: a hash with fields "token" (highest token seen) and
--          "value"
-- ARGV[1]  the writer's fencing token: a decimal uint64, without leading
--          zeros
-- ARGV[2]  the value to store
--
-- Reply: {1, token} stored, token being ARGV[1];
--        {0, token} rejected: token is the higher token the resource has seen.
-- Tokens are replied as decimal strings.
--
-- Equal tokens are accepted: one holder may write several times. Tokens are
-- compared as decimal strings, not Lua numbers, which round past 2^53: two
-- tokens that differ there would compare equal, and a stale write get in.

-- lower reports whether the decimal integer a is lower than b.
local function lower(a, b)
	if #a ~= #b then
		return #a < #b
	end
	return a < b
end

local seen = redis.call('hget', KEYS[1], 'token') or '0'
if lower(ARGV[1], seen) then
	return {0, seen}
end
redis.call('hset', KEYS[1], 'token', ARGV[1], 'value', ARGV[2])
return {1, ARGV[1]}
