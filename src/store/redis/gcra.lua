-- gengate rate limits: GCRA over every limit of one request, charged all-or-nothing, in one round trip.
-- The reference implementation; src/ratelimit/gcra.ts mirrors it operation for operation. This file only
-- defines functions: charge_limits (with script_now, server_now and past_deadline), which the limiter's
-- script (rate-limiter.ts) calls with KEYS and ARGV and the admission script (admission.ts) after each
-- request-id check, with that request's keys and arguments and the moment shared by every request of its
-- call; and refund_limits, which undoes a charge the gateway gave up on (undo-on-recovery.ts).
--
-- keys[i]        state of limit i, "<TAT whole µs>:<fraction in 1/limit µs>"; all keys share one hash tag.
-- argv[1]        "" in production: time comes from this server's TIME, never a client's clock. Tests may
--                pass µs here, and only limiters built with a test clock ever do.
-- argv[2]        TTL margin, ms, kept past the moment a limit is full again.
-- argv[3i..3i+2] limit (units), window (seconds), cost (units) of limit i.
-- Returns        now µs, admitted (1/0), then per limit: remaining units, full-again µs, wait µs (0: room).
--
-- All numbers are integers below 2^53 held in doubles (the caller bounds limit × window); "debt" is
-- TAT - now in units of 1/limit µs, so one unit of cost is exactly `window` of debt.

-- This server's TIME, µs.
local function server_now()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000000 + tonumber(time[2])
end

-- Now, µs: the test clock when one is given, this server's TIME otherwise.
local function script_now(clock)
  if clock ~= '' then return tonumber(clock) end
  return server_now()
end

-- Whether the caller has given up on this call: `deadline` is this server's µs at which it did ('': no
-- deadline), see store-clock.ts. A call past it must change nothing.
local function past_deadline(deadline, server_time)
  return deadline ~= '' and server_time >= tonumber(deadline)
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

-- `now` may be given by a script that charges several requests at one moment; otherwise argv[1] decides.
local function charge_limits(keys, argv, now)
  now = now or script_now(argv[1])
  local margin_ms = tonumber(argv[2])

  local count = #keys
  local limits, windows, costs, debts, repairs, valid = {}, {}, {}, {}, {}, {}
  local admitted = true

  for i = 1, count do
    local base = 3 * i
    local limit = tonumber(argv[base])
    local window = tonumber(argv[base + 1]) * 1000000
    local cost = tonumber(argv[base + 2])
    local capacity = limit * window
    local debt = 0
    local repair = false
    -- pcall: a key of another type is garbage like any other, not a reason to fail the request.
    local raw = redis.pcall('GET', keys[i])
    if type(raw) == 'string' then
      local tat, fraction = string.match(raw, '^(%d+):(%d+)$')
      tat, fraction = tonumber(tat), tonumber(fraction)
      if tat == nil or fraction == nil then
        repair = true
      else
        if tat >= now then
          if tat - now > window then
            -- Beyond one window ahead (a corrupted value, or a failover to a server whose clock is
            -- behind): full for one window at most.
            debt = capacity
            repair = true
          else
            debt = math.min((tat - now) * limit + math.min(fraction, limit - 1), capacity)
          end
        end
        valid[i] = not repair
      end
    elseif type(raw) == 'table' then
      repair = true
    end
    limits[i], windows[i], costs[i], debts[i], repairs[i] = limit, window, cost, debt, repair
    if debt + cost * window > capacity then
      admitted = false
    end
  end

  -- A valid state without a TTL would never expire. An admitted charge rewrites every state with one;
  -- a refused charge leaves states as they are, so those are checked.
  if not admitted then
    for i = 1, count do
      if valid[i] and redis.call('PTTL', keys[i]) < 0 then repairs[i] = true end
    end
  end

  local reply = { now, admitted and 1 or 0 }
  for i = 1, count do
    local limit, window, debt = limits[i], windows[i], debts[i]
    local cost = costs[i]
    if admitted then
      debt = debt + cost * window
      cost = 0
    end
    if admitted or repairs[i] then
      store_state(keys[i], debt, limit, now, margin_ms)
    end
    local capacity = limit * window
    local needed = debt + cost * window
    local wait = 0
    if needed > capacity then
      wait = math.ceil((needed - capacity) / limit)
    end
    reply[#reply + 1] = math.floor((capacity - debt) / window)
    reply[#reply + 1] = now + math.ceil(debt / limit)
    reply[#reply + 1] = wait
  end
  return reply
end

-- Gives back a charge of `argv` (as charge_limits takes them) made earlier: each limit's debt shrinks by the
-- cost, never below none, as if the charge had not been made (debt only ever decays since).
local function refund_limits(keys, argv)
  local now = server_now()
  local margin_ms = tonumber(argv[2])
  for i = 1, #keys do
    local base = 3 * i
    local limit = tonumber(argv[base])
    local window = tonumber(argv[base + 1]) * 1000000
    local cost = tonumber(argv[base + 2])
    local raw = redis.pcall('GET', keys[i])
    if type(raw) == 'string' then
      local tat, fraction = string.match(raw, '^(%d+):(%d+)$')
      tat, fraction = tonumber(tat), tonumber(fraction)
      if tat ~= nil and fraction ~= nil and tat >= now then
        local debt = math.max((tat - now) * limit + math.min(fraction, limit - 1) - cost * window, 0)
        store_state(keys[i], debt, limit, now, margin_ms)
      end
    end
  end
end
