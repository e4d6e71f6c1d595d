-- Adds a job's reported cost to its tenant's usage once per request id, whichever replica polls it
-- (usage-meter.ts).
--
-- KEYS[1]        the id's counted mark (keys.ts costCountedKey).
-- KEYS[2]        the tenant's usage hash of the month (keys.ts usageKey).
-- KEYS[3]        the tenant's lifetime usage hash.
-- ARGV[1]        the cost, micro-USD (an integer: costs are summed exactly).
-- ARGV[2]        the mark's lifetime, seconds.
-- ARGV[3]        the usage hashes' lifetime, seconds.
-- Returns        1 counted, 0 counted before.

if redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[2]) then
  for i = 2, 3 do
    redis.call('HINCRBY', KEYS[i], 'reportedCostMicroUsd', ARGV[1])
    redis.call('EXPIRE', KEYS[i], ARGV[3])
  end
  return 1
end
return 0
