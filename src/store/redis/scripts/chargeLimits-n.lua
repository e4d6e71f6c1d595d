-- Charges one request's rate limits, all or nothing (the rate limiter, rate-limiter.ts).
--
-- KEYS[i]        state of limit i (keys.ts rateLimitKey), one tenant's: one hash tag.
-- ARGV[1]        "" in production: "now" is this server's TIME, never a client's clock. Tests may pass
--                µs here, and only limiters built with a test clock ever do.
-- ARGV[2]        TTL margin, ms, kept past the moment a limit is full again.
-- ARGV[3]        the deadline, this server's µs ('': none yet; store-clock.ts).
-- ARGV[4..]      limit (units), window (seconds), cost (units) of each limit, in KEYS' order.
-- Returns        charge_limits' reply (gcra.lua), or {'expired', this server's µs} past the deadline.

--- @include "server-time"
--- @include "gcra"

local server_time = server_now()
if past_deadline(ARGV[3], server_time) then return {'expired', server_time} end
local now = ARGV[1] == '' and server_time or tonumber(ARGV[1])
return charge_limits(read_limits(KEYS, ARGV, 4), now, tonumber(ARGV[2]))
