-- The upstream accepted a job's create: it is followed from now on, first polled after ARGV[2] ms.
--
-- KEYS[1]        the jobs' records (jobs.lua).
-- KEYS[2]        the jobs' due times.
-- ARGV[1]        the request id; ARGV[2] the first poll's delay, ms.
-- Returns        1, or 0 when the job is not reserved (settled already, or unknown).

--- @include "server-time"

local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 0 end
local job = cjson.decode(raw)
if job.state ~= 'reserved' then return 0 end
job.state = 'submitted'
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(job))
redis.call('ZADD', KEYS[2], math.floor(server_now() / 1000) + tonumber(ARGV[2]), ARGV[1])
return 1
