-- Leases up to ARGV[1] jobs that are due (src/jobs/tracker.ts): each is due again after the lease, so no
-- other replica takes it meanwhile, and one that a replica never comes back to is taken over then. A job
-- that needs an upstream poll is leased only within its credential's poll rate, summed over every
-- replica: at most ARGV[3] polls in any one second, kept as the log of the last second's polls (a sorted
-- set of their times), so no second ever holds more, even after an idle spell. An ended job (its
-- listeners to tell) or an expired one needs no poll.
--
-- KEYS[1]        the jobs' records; KEYS[2] their due times (jobs.lua).
-- KEYS[3..]      each credential's log of polls (keys.ts credentialPollsKey).
-- ARGV[1]        how many at most; ARGV[2] the lease, ms; ARGV[3] polls per second per credential.
-- ARGV[4]        the age past which a job is expired, ms; ARGV[5] TTL margin of the poll logs, ms.
-- ARGV[6..]      the credentials' names, in the order of KEYS[3..].
-- Returns        this server's ms, then the leased jobs' request ids and records, in pairs.

--- @include "server-time"

local now_us = server_now()
local now_ms = math.floor(now_us / 1000)
local count, lease_ms = tonumber(ARGV[1]), tonumber(ARGV[2])
local polls_per_second, max_age_ms, margin_ms = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local poll_keys = {}
for i = 3, #KEYS do poll_keys[ARGV[i + 3]] = KEYS[i] end

local reply = { now_ms }
-- Per credential seen in this call: the polls its log holds for the last second.
local polls_in_last_second = {}
local leased = 0

-- Whether `credential` may be polled once more now; if so, the poll is logged.
local function take_poll(credential, id)
  local key = poll_keys[credential]
  if key == nil then return true end
  local polls = polls_in_last_second[credential]
  if polls == nil then
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now_ms - 1000)
    polls = redis.call('ZCARD', key)
  end
  if polls >= polls_per_second then
    polls_in_last_second[credential] = polls
    return false
  end
  -- Scored in ms (a number Lua passes on exactly); the job's id keeps two polls of one moment apart.
  redis.call('ZADD', key, now_ms, string.format('%.0f', now_us) .. ':' .. id)
  redis.call('PEXPIRE', key, 1000 + margin_ms)
  polls_in_last_second[credential] = polls + 1
  return true
end
-- More than `count` candidates: some may wait for their credential's polls.
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now_ms, 'LIMIT', 0, count * 4)) do
  if leased >= count then break end
  local raw = redis.call('HGET', KEYS[1], id)
  if not raw then
    redis.call('ZREM', KEYS[2], id)
  else
    local job = cjson.decode(raw)
    local needs_poll = job.state ~= 'ended' and now_ms - job.admittedAt < max_age_ms
    if not needs_poll or take_poll(job.credential, id) then
      redis.call('ZADD', KEYS[2], now_ms + lease_ms, id)
      reply[#reply + 1] = id
      reply[#reply + 1] = raw
      leased = leased + 1
    end
  end
end
return reply
