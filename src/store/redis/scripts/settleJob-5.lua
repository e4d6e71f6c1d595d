-- Settles a job's reservation exactly once (src/jobs/book.ts): its reserved cost leaves the periods it was
-- reserved in, what it cost is added to their spending, its slots are freed; then the job stays, `ended`,
-- until its listeners were told (toldJob-3.lua), due again after ARGV[7] ms should the replica that settled
-- it die first. A create the upstream refused (`refused`) is forgotten at once.
--
-- KEYS[1..3]     the jobs' records, due times and admission times (jobs.lua).
-- KEYS[4]        the tenant's hash (keys.ts tenantJobsKey); KEYS[5] the credential's count.
-- ARGV[1]        the request id; ARGV[2], ARGV[3] the tenant and credential KEYS[4] and KEYS[5] are of.
-- ARGV[4]        the outcome: completed, failed, cancelled, expired or refused.
-- ARGV[5]        what it cost, µUSD (completed only).
-- ARGV[6]        the upstream's final poll answer ('' when none).
-- ARGV[7]        how long the settling replica has to tell its listeners, ms.
-- Returns        {'settled', ended ms, spent µUSD, the job's record}, {'unknown'}, {'settled_before'}, or
--                {'mismatch', tenant, credential} when the job's are not those of KEYS[4] and KEYS[5].

--- @include "server-time"

local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {'unknown'} end
local job = cjson.decode(raw)
if job.state == 'ended' then return {'settled_before'} end
if job.tenant ~= ARGV[2] or job.credential ~= ARGV[3] then return {'mismatch', job.tenant, job.credential} end
local outcome = ARGV[4]
local spent = 0
if outcome == 'completed' then spent = tonumber(ARGV[5]) elseif outcome == 'expired' then spent = job.cost end
-- `0 - cost`, never `-cost`: a cost of 0 would be -0, which HINCRBY refuses as "-0".
for _, period in ipairs({ job.day, job.month }) do
  if job.cost ~= 0 then redis.call('HINCRBY', KEYS[4], period .. ':reserved', 0 - job.cost) end
  if spent ~= 0 then redis.call('HINCRBY', KEYS[4], period .. ':spent', spent) end
end
redis.call('HINCRBY', KEYS[4], 'inflight', -1)
redis.call('DECR', KEYS[5])
local now_ms = math.floor(server_now() / 1000)
if outcome == 'refused' then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[3], ARGV[1])
  return {'settled', now_ms, 0, raw}
end
job.state, job.outcome, job.endedAt = 'ended', outcome, now_ms
if ARGV[6] ~= '' then job.record = ARGV[6] end
local ended = cjson.encode(job)
redis.call('HSET', KEYS[1], ARGV[1], ended)
redis.call('ZADD', KEYS[2], now_ms + tonumber(ARGV[7]), ARGV[1])
return {'settled', now_ms, spent, ended}
