-- Jobs' reservations (src/jobs/book.ts): a create's expected cost against its tenant's budgets and a slot
-- under the tenant's and the credential's caps, checked then taken in one script. Amounts are micro-USD
-- integers.
--
-- A tenant's hash (keys.ts tenantJobsKey): `inflight`, and per period `<period>:reserved` and
-- `<period>:spent` (periods of calendar.lua). A credential's count of jobs in flight: a string. Every job:
-- a JSON record in one hash (field: its request id) and its next due time (epoch ms) in one sorted set;
-- its admission time in another sorted set (the oldest job's age).

-- The keys of one reservation, from keys[first] on: tenant hash, credential count, records, due, admitted.
local function reservation_keys(keys, first)
  return {
    tenant = keys[first], credential = keys[first + 1], records = keys[first + 2], due = keys[first + 3],
    admitted = keys[first + 4],
  }
end

-- One reservation from argv[first] on: cost, daily budget, monthly budget, tenant cap, credential cap
-- ('' for none), route, credential name, how long to wait for the upstream's answer (ms), request id
-- (lower case).
local function read_reservation(argv, first)
  return {
    cost = tonumber(argv[first]), daily = tonumber(argv[first + 1]), monthly = tonumber(argv[first + 2]),
    tenant_max = tonumber(argv[first + 3]), credential_max = tonumber(argv[first + 4]),
    route = argv[first + 5], credential = argv[first + 6], answer_wait_ms = tonumber(argv[first + 7]),
    request_id = argv[first + 8],
  }
end

local function hash_number(key, field)
  return tonumber(redis.call('HGET', key, field)) or 0
end

-- Why the reservation does not fit now, or nil: {'budget_exceeded', scope, µUSD left, period end ms} or
-- {'too_many_jobs_in_flight', scope, cap}.
local function reservation_refusal(k, r, now_us)
  local day, day_end, month, month_end = budget_periods(now_us)
  -- The month first: when both are spent, the refusal names the one whose reset admits the create again.
  local scopes = { { 'monthly', r.monthly, month, month_end }, { 'daily', r.daily, day, day_end } }
  for _, scope in ipairs(scopes) do
    local limit, period = scope[2], scope[3]
    if limit ~= nil then
      local used = hash_number(k.tenant, period .. ':reserved') + hash_number(k.tenant, period .. ':spent')
      if used + r.cost > limit then
        return { 'budget_exceeded', scope[1], math.max(limit - used, 0), scope[4] }
      end
    end
  end
  if r.tenant_max ~= nil and hash_number(k.tenant, 'inflight') >= r.tenant_max then
    return { 'too_many_jobs_in_flight', 'tenant', r.tenant_max }
  end
  if r.credential_max ~= nil and (tonumber(redis.call('GET', k.credential)) or 0) >= r.credential_max then
    return { 'too_many_jobs_in_flight', 'credential', r.credential_max }
  end
  return nil
end

-- Takes the reservation and starts following the job: first due once the upstream must have answered
-- (a replica that dies before it learns the answer leaves the job to the tracker).
local function take_reservation(k, r, tenant, now_us)
  local day, _, month = budget_periods(now_us)
  redis.call('HINCRBY', k.tenant, day .. ':reserved', r.cost)
  redis.call('HINCRBY', k.tenant, month .. ':reserved', r.cost)
  redis.call('HINCRBY', k.tenant, 'inflight', 1)
  redis.call('INCR', k.credential)
  local now_ms = math.floor(now_us / 1000)
  redis.call('HSET', k.records, r.request_id, cjson.encode({
    tenant = tenant, route = r.route, credential = r.credential, cost = r.cost, day = day, month = month,
    admittedAt = now_ms, state = 'reserved', polls = 0,
  }))
  redis.call('ZADD', k.due, now_ms + r.answer_wait_ms, r.request_id)
  redis.call('ZADD', k.admitted, now_ms, r.request_id)
end

-- The upstream took the job's create: it is followed from now on, first polled at `due_ms` (epoch ms).
local function submit_job(records, due, request_id, job, due_ms)
  job.state = 'submitted'
  redis.call('HSET', records, request_id, cjson.encode(job))
  redis.call('ZADD', due, due_ms, request_id)
end
