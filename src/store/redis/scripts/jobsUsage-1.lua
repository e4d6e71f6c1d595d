-- A tenant's budgets and jobs in flight now (account.usage), in the periods of this server's clock.
--
-- KEYS[1]        the tenant's hash (jobs.lua).
-- Returns        the day's end (ms), its reserved and spent µUSD, the month's end, reserved, spent, then
--                the jobs in flight.

--- @include "server-time"
--- @include "calendar"

local day, day_end, month, month_end = budget_periods(server_now())
local function field(name) return tonumber(redis.call('HGET', KEYS[1], name)) or 0 end
return { day_end, field(day .. ':reserved'), field(day .. ':spent'), month_end, field(month .. ':reserved'),
  field(month .. ':spent'), field('inflight') }
