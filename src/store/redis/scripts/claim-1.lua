-- Claims a request id for a tenant when nobody holds it (ownership-store.ts).
--
-- KEYS[1]        the id's key (keys.ts ownershipKey).
-- ARGV[1]        the attempt's pending record (ownership-record.ts).
-- ARGV[2]        its lifetime, ms.
-- ARGV[3]        the deadline, this server's µs ('': none yet; store-clock.ts).
-- Returns        {this server's µs} when this call claimed the id, {µs, the record} when another holds
--                it, {µs, 'no_record', 1} when its key holds something else than a record, or
--                {'expired', µs} past the deadline.

--- @include "server-time"

local now = server_now()
if past_deadline(ARGV[3], now) then return {'expired', now} end
-- pcall: a key that is not a string is that id's damage, answered as such, not a failed store call.
local existing = redis.pcall('GET', KEYS[1])
if type(existing) == 'table' then return {now, 'no_record', 1} end
if existing then return {now, existing} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {now}
