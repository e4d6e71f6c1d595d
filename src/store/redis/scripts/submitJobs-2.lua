-- The upstream accepted these jobs' creates (those answered in one turn): each is followed from now on.
--
-- KEYS[1]        the jobs' records (jobs.lua, whose submit_job each one goes through).
-- KEYS[2]        the jobs' due times.
-- ARGV[2i-1]     a job's request id; ARGV[2i] the delay of its first poll, ms.
-- Returns        per job, 1, or 0 when it is not reserved (settled already, or unknown).

--- @include "server-time"
--- @include "calendar"
--- @include "jobs"

local now_ms = math.floor(server_now() / 1000)
local submitted = {}
for i = 1, #ARGV / 2 do
  local request_id = ARGV[2 * i - 1]
  local raw = redis.call('HGET', KEYS[1], request_id)
  local job = raw and cjson.decode(raw)
  if job and job.state == 'reserved' then
    submit_job(KEYS[1], KEYS[2], request_id, job, now_ms + tonumber(ARGV[2 * i]))
    submitted[i] = 1
  else
    submitted[i] = 0
  end
end
return submitted
