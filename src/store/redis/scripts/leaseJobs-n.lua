-- Leases up to ARGV[1] jobs that are due (src/jobs/tracker.ts): each is due again after the lease, so no
-- other replica takes it meanwhile, and one that a replica never comes back to is taken over then. A job
-- that needs an upstream poll is leased only within its credential's poll rate (charge_limits of
-- gcra.lua, summed over every replica); an ended job (its listeners to tell) or an expired one needs none.
--
-- KEYS[1]        the jobs' records; KEYS[2] their due times (jobs.lua).
-- KEYS[3..]      each credential's poll rate state (keys.ts credentialPollsKey).
-- ARGV[1]        how many at most; ARGV[2] the lease, ms; ARGV[3] polls per second per credential.
-- ARGV[4]        the age past which a job is expired, ms; ARGV[5] TTL margin of the poll rate states, ms.
-- ARGV[6..]      the credentials' names, in the order of KEYS[3..].
-- Returns        this server's ms, then the leased jobs' request ids and records, in pairs.

--- @include "server-time"
--- @include "gcra"

local now_us = server_now()
local now_ms = math.floor(now_us / 1000)
local count, lease_ms = tonumber(ARGV[1]), tonumber(ARGV[2])
local polls_per_second, max_age_ms, margin_ms = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local poll_keys = {}
for i = 3, #KEYS do poll_keys[ARGV[i + 3]] = KEYS[i] end

local reply = { now_ms }
local out_of_polls = {}
local leased = 0
-- More than `count` candidates: some may wait for their credential's polls.
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now_ms, 'LIMIT', 0, count * 4)) do
  if leased >= count then break end
  local raw = redis.call('HGET', KEYS[1], id)
  if not raw then
    redis.call('ZREM', KEYS[2], id)
  else
    local job = cjson.decode(raw)
    local allowed = true
    if job.state ~= 'ended' and now_ms - job.admittedAt < max_age_ms then
      local key = poll_keys[job.credential]
      if out_of_polls[job.credential] then
        allowed = false
      elseif key ~= nil then
        local limit = { { key = key, limit = polls_per_second, window = 1000000, cost = 1 } }
        allowed = charge_limits(limit, now_us, margin_ms)[2] == 1
        out_of_polls[job.credential] = not allowed
      end
    end
    if allowed then
      redis.call('ZADD', KEYS[2], now_ms + lease_ms, id)
      reply[#reply + 1] = id
      reply[#reply + 1] = raw
      leased = leased + 1
    end
  end
end
return reply
