-- Forgets an ended job whose listeners were told (settleJob-5.lua).
--
-- KEYS[1..3]     the jobs' records, due times and admission times (jobs.lua).
-- ARGV[1]        the request id.
-- Returns        1, or 0 when it is not an ended job.

local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw or cjson.decode(raw).state ~= 'ended' then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return 1
