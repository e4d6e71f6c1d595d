-- Undoes one claim attempt the gateway gave up on, and the charge made with it, only while the id still
-- holds that attempt's pending record (store-calls.ts): harmless when there is nothing to undo.
--
-- KEYS[1]        the id's key (keys.ts ownershipKey).
-- KEYS[2..]      the keys of the limits charged with the claim (none for a claim made alone).
-- ARGV[1]        the attempt's pending record (ownership-record.ts).
-- ARGV[2]        TTL margin of limit states, ms.
-- ARGV[3..]      limit, window, cost of each limit, in KEYS' order.
-- Returns        1 undone, 0 the id holds anything else.

--- @include "server-time"
--- @include "gcra"

if redis.pcall('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
local limit_keys = {}
for i = 2, #KEYS do limit_keys[i - 1] = KEYS[i] end
refund_limits(read_limits(limit_keys, ARGV, 3), server_now(), tonumber(ARGV[2]))
return 1
