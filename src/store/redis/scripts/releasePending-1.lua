-- A release sent after an outage (store-calls.ts): deletes the id's record only while it is the
-- tenant's pending claim; a completed record is kept.
--
-- KEYS[1]        the id's key (keys.ts ownershipKey).
-- ARGV[1]        the tenant.
-- Returns        1 deleted, 0 kept.

local record = redis.pcall('GET', KEYS[1])
if type(record) ~= 'string' then return 0 end
if record == ARGV[1] or string.sub(record, 1, #ARGV[1] + 2) == ARGV[1] .. ' ~' then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
