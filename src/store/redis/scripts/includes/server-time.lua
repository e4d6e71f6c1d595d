-- This server's clock, and the deadline a caller gives a call that writes (store-clock.ts).

-- This server's TIME, µs.
local function server_now()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000000 + tonumber(time[2])
end

-- Whether the caller has given up on this call: `deadline` is this server's µs at which it did ('': no
-- deadline, the store's clock is not known yet). A call past it must change nothing.
local function past_deadline(deadline, now)
  return deadline ~= '' and now >= tonumber(deadline)
end
