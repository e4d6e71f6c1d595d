-- Writes ownership records unless another tenant holds their ids: completes claims, or writes back ones
-- made while the store was down (ownership-store.ts).
--
-- KEYS[i]        a record's id key (keys.ts ownershipKey).
-- ARGV[3i-2]     its value (ownership-record.ts).
-- ARGV[3i-1]     its tenant.
-- ARGV[3i]       its lifetime, ms.
-- Returns        per record, 1 written, 0 held by another tenant or its key holds no record.

local written = {}
for i = 1, #KEYS do
  -- pcall: a key that is not a string is no record to overwrite, and must not fail the others' writes.
  local existing = redis.pcall('GET', KEYS[i])
  if type(existing) == 'table' or (existing and string.match(existing, '^[^ ]*') ~= ARGV[3 * i - 1]) then
    written[i] = 0
  else
    redis.call('SET', KEYS[i], ARGV[3 * i - 2], 'PX', ARGV[3 * i])
    written[i] = 1
  end
end
return written
