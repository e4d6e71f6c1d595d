-- Admits the requests of one event-loop turn (admission.ts, batch-per-turn.ts), in order, at one moment:
-- for each, checks its request id, charges its limits (charge_limits of gcra.lua) and claims the id only
-- when the charge is admitted. Single Redis only: the keys of several tenants and ids.
--
-- ARGV[1]        how many requests.
-- ARGV[2]        "now" for charge_limits: "" in production (this server's TIME), µs in tests.
-- ARGV[3]        TTL margin of limit states, ms.
-- ARGV[4]        lifetime of a claim, ms.
-- ARGV[5]        the deadline, this server's µs ('': none yet; store-clock.ts).
-- Then per request, in order, from KEYS: its id's key (keys.ts ownershipKey), then its limits' keys;
-- and from ARGV: its limit count, `claim` or `own`, its tenant, the pending record a claim writes
-- (ownership-record.ts), then limit, window, cost of each limit.
-- Returns        this server's µs, then per request one of
--                {'taken', record}: the id is held (a claim);
--                {'not_owned'} / {'unknown'}: the id is another tenant's / not in the store (a read);
--                {'charged', charge_limits' reply}: charged or refused, and claimed when admitted;
--                {'no_record'}: the id's key holds something else than a record;
--                or {'expired', this server's µs} past the deadline.

--- @include "server-time"
--- @include "gcra"

local function admit(record_key, limits, intent, tenant, claim_record, ttl, now, margin_ms)
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
  local charged = charge_limits(limits, now, margin_ms)
  if intent == 'claim' and charged[2] == 1 then
    redis.call('SET', record_key, claim_record, 'PX', ttl)
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
  replies[n + 1] = admit(KEYS[key], read_limits(limit_keys, ARGV, arg + 4), ARGV[arg + 1], ARGV[arg + 2],
    ARGV[arg + 3], ARGV[4], now, margin_ms)
  key = key + 1 + limit_count
  arg = arg + 4 + 3 * limit_count
end
return replies
