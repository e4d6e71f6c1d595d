-- Admits the requests of one event-loop turn (admission.ts, send-per-turn.ts), in order, at one moment:
-- for each, checks its request id, checks its job's reservation (jobs.lua: budgets and slots), charges its
-- limits (charge_limits of gcra.lua), and claims the id and takes the reservation only when the charge is
-- admitted. Single Redis only: the keys of several tenants and ids.
--
-- ARGV[1]        how many requests.
-- ARGV[2]        "now" for charge_limits: "" in production (this server's TIME), µs in tests.
-- ARGV[3]        TTL margin of limit states, ms.
-- ARGV[4]        lifetime of a claim, ms.
-- ARGV[5]        the deadline, this server's µs ('': none yet; store-clock.ts).
-- Then per request, in order, from KEYS: its id's key (keys.ts ownershipKey), then its limits' keys;
-- then, when it reserves, the 5 keys of reservation_keys (jobs.lua); and from ARGV: its limit count,
-- `claim` or `own`, its tenant, the pending record a claim writes (ownership-record.ts), 1 when it
-- reserves (else 0), then limit, window, cost of each limit, then the 9 values of read_reservation.
-- Returns        this server's µs, then per request one of
--                {'taken', record}: the id is held (a claim);
--                {'not_owned'} / {'unknown'}: the id is another tenant's / not in the store (a read);
--                {'charged', charge_limits' reply}: charged or refused, and claimed when admitted;
--                {'job', reservation_refusal's reply}: the reservation does not fit (nothing charged);
--                {'no_record'}: the id's key holds something else than a record;
--                or {'expired', this server's µs} past the deadline.

--- @include "server-time"
--- @include "gcra"
--- @include "calendar"
--- @include "jobs"

local function admit(record_key, limits, intent, tenant, claim_record, ttl, now, margin_ms, job, server_us)
  -- pcall: a key that is not a string refuses this admission alone, not the others of its call (Redis
  -- would keep what they had already written), and charges nothing.
  local record = redis.pcall('GET', record_key)
  if type(record) == 'table' then return {'no_record'} end
  if intent == 'claim' then
    if record then return {'taken', record} end
  elseif not record then
    return {'unknown'}
  elseif string.match(record, '^[^ ]*') ~= tenant then
    return {'not_owned'}
  end
  if job ~= nil then
    local refusal = reservation_refusal(job.keys, job.reservation, server_us)
    if refusal ~= nil then return {'job', refusal} end
  end
  local charged = charge_limits(limits, now, margin_ms)
  if intent == 'claim' and charged[2] == 1 then
    redis.call('SET', record_key, claim_record, 'PX', ttl)
    if job ~= nil then take_reservation(job.keys, job.reservation, tenant, server_us) end
  end
  return {'charged', charged}
end

local server_time = server_now()
if past_deadline(ARGV[5], server_time) then return {'expired', server_time} end
local now = ARGV[2] == '' and server_time or tonumber(ARGV[2])
local margin_ms = tonumber(ARGV[3])
local replies = {server_time}
local key, arg = 1, 6
for n = 1, tonumber(ARGV[1]) do
  local limit_count = tonumber(ARGV[arg])
  local limit_keys = {}
  for i = 1, limit_count do limit_keys[i] = KEYS[key + i] end
  local job = nil
  local reservation_arg = arg + 5 + 3 * limit_count
  if ARGV[arg + 4] == '1' then
    job = {
      keys = reservation_keys(KEYS, key + 1 + limit_count),
      reservation = read_reservation(ARGV, reservation_arg),
    }
  end
  replies[n + 1] = admit(KEYS[key], read_limits(limit_keys, ARGV, arg + 5), ARGV[arg + 1], ARGV[arg + 2],
    ARGV[arg + 3], ARGV[4], now, margin_ms, job, server_time)
  key = key + 1 + limit_count + (job and 5 or 0)
  arg = reservation_arg + (job and 9 or 0)
end
return replies
