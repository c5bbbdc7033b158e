-- rw_writer_leave: a waiting writer gives up.
--
-- KEYS[1]  waiting writers (sorted set, see rw_rlock)
-- KEYS[2]  the channel
-- ARGV[1]  the writer's id
-- ARGV[2]  the publish command
--
-- Reply: 1 if the writer was waiting. When the last waiting writer leaves,
-- "1" is published: readers held back for it may enter.
if redis.call('zrem', KEYS[1], ARGV[1]) == 0 then
	return 0
end
if redis.call('zcard', KEYS[1]) == 0 then
	redis.call(ARGV[2], KEYS[2], '1')
end
return 1
