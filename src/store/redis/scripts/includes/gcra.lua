-- gengate rate limits: GCRA over every limit of one request, charged all-or-nothing. The reference
-- implementation; src/ratelimit/gcra.ts mirrors it operation for operation.
--
-- A limit's key holds "<TAT whole µs>:<fraction in 1/limit µs>"; all keys of a tenant share one hash
-- tag. All numbers are integers below 2^53 held in doubles (the caller bounds limit × window); "debt" is
-- TAT - now in units of 1/limit µs, so one unit of cost is exactly `window` of debt.

-- The limits of one charge: keys[i], and from argv[first] on 3 values per key: limit (units), window
-- (seconds), cost (units).
local function read_limits(keys, argv, first)
  local limits = {}
  for i = 1, #keys do
    local base = first + 3 * (i - 1)
    limits[i] = {
      key = keys[i],
      limit = tonumber(argv[base]),
      window = tonumber(argv[base + 1]) * 1000000,
      cost = tonumber(argv[base + 2]),
    }
  end
  return limits
end

-- A limit's stored state: its TAT and fraction, or nil when there is none; `damaged` when the key holds
-- something that is no state (another type, or an unparsable string): garbage like any other, never a
-- reason to fail the request (pcall).
local function read_state(key)
  local raw = redis.pcall('GET', key)
  if type(raw) == 'table' then return nil, nil, true end
  if not raw then return nil, nil, false end
  local tat, fraction = string.match(raw, '^(%d+):(%d+)$')
  tat, fraction = tonumber(tat), tonumber(fraction)
  if tat == nil or fraction == nil then return nil, nil, true end
  return tat, fraction, false
end

-- Writes a limit's state, with a TTL that outlives it by margin_ms; no debt is no state.
local function store_state(key, debt, limit, now, margin_ms)
  if debt == 0 then
    redis.call('DEL', key)
    return
  end
  local whole = math.floor(debt / limit)
  local ttl_ms = math.ceil(whole / 1000) + margin_ms
  redis.call('SET', key, string.format('%.0f:%.0f', now + whole, debt - whole * limit), 'PX', string.format('%.0f', ttl_ms))
end

-- Charges every limit its cost at `now`, or none when one has no room. Returns now µs, admitted (1/0),
-- then per limit: remaining units, full-again µs, wait µs (0: room).
local function charge_limits(limits, now, margin_ms)
  local debts, repairs, valid = {}, {}, {}
  local admitted = true

  for i, l in ipairs(limits) do
    local capacity = l.limit * l.window
    local debt = 0
    local tat, fraction, damaged = read_state(l.key)
    local repair = damaged
    if tat ~= nil then
      if tat >= now then
        if tat - now > l.window then
          -- Beyond one window ahead (a corrupted value, or a failover to a server whose clock is
          -- behind): full for one window at most.
          debt = capacity
          repair = true
        else
          debt = math.min((tat - now) * l.limit + math.min(fraction, l.limit - 1), capacity)
        end
      end
      valid[i] = not repair
    end
    debts[i], repairs[i] = debt, repair
    if debt + l.cost * l.window > capacity then
      admitted = false
    end
  end

  -- A valid state without a TTL would never expire. An admitted charge rewrites every state with one;
  -- a refused charge leaves states as they are, so those are checked.
  if not admitted then
    for i, l in ipairs(limits) do
      if valid[i] and redis.call('PTTL', l.key) < 0 then repairs[i] = true end
    end
  end

  local reply = { now, admitted and 1 or 0 }
  for i, l in ipairs(limits) do
    local debt, cost = debts[i], l.cost
    if admitted then
      debt = debt + cost * l.window
      cost = 0
    end
    if admitted or repairs[i] then
      store_state(l.key, debt, l.limit, now, margin_ms)
    end
    local capacity = l.limit * l.window
    local needed = debt + cost * l.window
    local wait = 0
    if needed > capacity then
      wait = math.ceil((needed - capacity) / l.limit)
    end
    reply[#reply + 1] = math.floor((capacity - debt) / l.window)
    reply[#reply + 1] = now + math.ceil(debt / l.limit)
    reply[#reply + 1] = wait
  end
  return reply
end

-- Gives back a charge made earlier: each limit's debt shrinks by its cost, never below none, as if the
-- charge had not been made (debt only ever decays since). A damaged state is left as it is.
local function refund_limits(limits, now, margin_ms)
  for _, l in ipairs(limits) do
    local tat, fraction = read_state(l.key)
    if tat ~= nil and tat >= now then
      local debt = math.max((tat - now) * l.limit + math.min(fraction, l.limit - 1) - l.cost * l.window, 0)
      store_state(l.key, debt, l.limit, now, margin_ms)
    end
  end
end
