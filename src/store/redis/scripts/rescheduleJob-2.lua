-- A job polled and not ended: due again after ARGV[2] ms, with its count of polls.
--
-- KEYS[1]        the jobs' records; KEYS[2] their due times (jobs.lua).
-- ARGV[1]        the request id; ARGV[2] the delay, ms; ARGV[3] its polls so far.
-- Returns        1, or 0 when the job ended (or was forgotten) meanwhile.

--- @include "server-time"

local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 0 end
local job = cjson.decode(raw)
if job.state == 'ended' then return 0 end
job.polls = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(job))
redis.call('ZADD', KEYS[2], math.floor(server_now() / 1000) + tonumber(ARGV[2]), ARGV[1])
return 1
