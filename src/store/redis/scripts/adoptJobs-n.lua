-- Follows the jobs of creates admitted while the store did not answer (failMode open; adopt-unreserved.ts):
-- each is recorded as if reserved when it was admitted (its periods, its admission time), its slots taken,
-- so the tracker settles it like any other job (settleJob-5.lua: its real cost charged once). Runs once
-- per job: a job already known (the admission script may have run before the store failed, or this call
-- ran before and its reply was lost) is left as it is, only marked submitted when its create was taken.
--
-- KEYS[1..3]     the jobs' records, due times and admission times (jobs.lua).
-- KEYS[3 + 3i - 2 .. 3 + 3i]  per job i: its tenant's hash, its credential's count, its adopted mark
--                (keys.ts adoptedJobKey).
-- ARGV[1]        how many jobs; ARGV[2] the first poll's delay of a taken create, ms; ARGV[3] the adopted
--                mark's lifetime, ms.
-- Then per job   the 9 values of read_reservation (jobs.lua; no budget, no cap), its tenant, when it was
--                admitted (epoch ms), `accepted` (the upstream took it) or `unknown` (no answer), and the
--                time (epoch ms) after which a missing record may be one already settled and forgotten
--                ('' when the admission was never sent).
-- Returns        per job: 'adopted', 'known', or 'too_late' (its admission may have run, its record is
--                gone, and it may have been settled since: not adopted, so never charged twice).

--- @include "server-time"
--- @include "calendar"
--- @include "jobs"

local now_ms = math.floor(server_now() / 1000)
local first_poll_ms, mark_ttl_ms = tonumber(ARGV[2]), tonumber(ARGV[3])

local replies = {}
local arg = 4
for n = 1, tonumber(ARGV[1]) do
  local first = 3 + 3 * (n - 1)
  local k = reservation_keys({ KEYS[first + 1], KEYS[first + 2], KEYS[1], KEYS[2], KEYS[3] }, 1)
  local mark = KEYS[first + 3]
  local r = read_reservation(ARGV, arg)
  local tenant, admitted_ms, answer, not_after = ARGV[arg + 9], tonumber(ARGV[arg + 10]), ARGV[arg + 11], ARGV[arg + 12]
  arg = arg + 13
  local raw = redis.call('HGET', k.records, r.request_id)
  if raw then
    local job = cjson.decode(raw)
    if answer == 'accepted' and job.state == 'reserved' then
      submit_job(k.records, k.due, r.request_id, job, now_ms + first_poll_ms)
    end
    replies[n] = 'known'
  elseif redis.call('EXISTS', mark) == 1 then
    replies[n] = 'known'
  elseif not_after ~= '' and now_ms > tonumber(not_after) then
    replies[n] = 'too_late'
  else
    -- Reserved at its admission: its due time is then that admission's + the answer's wait.
    take_reservation(k, r, tenant, admitted_ms * 1000)
    if answer == 'accepted' then
      local job = cjson.decode(redis.call('HGET', k.records, r.request_id))
      submit_job(k.records, k.due, r.request_id, job, now_ms + first_poll_ms)
    end
    redis.call('SET', mark, '1', 'PX', mark_ttl_ms)
    replies[n] = 'adopted'
  end
end
return replies
