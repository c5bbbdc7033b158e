-- fence_set: store a value for a fenced resource unless the writer's token is
-- older than one the resource has already seen.
--
-- KEYS[1]  the resource: a hash with fields "token" (highest token seen) and
--          "value"
-- ARGV[1]  the writer's fencing token
-- ARGV[2]  the value to store
--
-- Reply: {1, token} stored, token being ARGV[1];
--        {0, token} rejected: token is the higher token the resource has seen.
--
-- Equal tokens are accepted: one holder may write several times.
local seen = tonumber(redis.call('hget', KEYS[1], 'token') or '0')
local token = tonumber(ARGV[1])
if token < seen then
	return {0, seen}
end
redis.call('hset', KEYS[1], 'token', ARGV[1], 'value', ARGV[2])
return {1, token}
