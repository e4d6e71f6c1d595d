-- The benchmark's one request for wrk: POST /v1/images/generations with the body in WRK_BODY_FILE.
-- With WRK_RATE_PER_SECOND set, requests are paced to that rate on a schedule (wrk2 is not in Debian):
-- each request claims the next slot, so a slow answer does not lower the rate, it makes the next
-- requests go out at once. wrk's delay() has whole-millisecond resolution, so at a few thousand per
-- second requests leave in small bursts within each millisecond.
local body_file = assert(os.getenv("WRK_BODY_FILE"), "WRK_BODY_FILE is not set")
local file = assert(io.open(body_file, "rb"))
wrk.method = "POST"
wrk.body = file:read("*a")
file:close()
wrk.headers["Content-Type"] = "application/json"
local authorization = os.getenv("WRK_AUTHORIZATION")
if authorization ~= nil and authorization ~= "" then
  wrk.headers["Authorization"] = authorization
end

local rate = tonumber(os.getenv("WRK_RATE_PER_SECOND") or "0")
-- After a stall longer than this the schedule restarts from now rather than firing a catch-up burst.
local MAX_LAG_MS = 50

if rate > 0 then
  local ffi = require("ffi")
  ffi.cdef([[
    typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
    int clock_gettime(int clock_id, bench_timespec *time);
  ]])
  local CLOCK_MONOTONIC = 1
  local now_spec = ffi.new("bench_timespec")
  local function now_ms()
    ffi.C.clock_gettime(CLOCK_MONOTONIC, now_spec)
    return tonumber(now_spec.tv_sec) * 1000 + tonumber(now_spec.tv_nsec) / 1e6
  end
  local period_ms = 1000 / rate
  local next_slot_ms = nil

  function delay()
    local now = now_ms()
    if next_slot_ms == nil or next_slot_ms < now - MAX_LAG_MS then
      next_slot_ms = now
    end
    next_slot_ms = next_slot_ms + period_ms
    local wait = next_slot_ms - now
    if wait <= 0 then
      return 0
    end
    return math.floor(wait + 0.5)
  end
end

-- One machine-readable line; latencies in microseconds.
function done(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"requests":%d,"durationUs":%d,"p50Us":%d,"p99Us":%d,"p999Us":%d,"maxUs":%d,' ..
      '"connectErrors":%d,"readErrors":%d,"writeErrors":%d,"timeouts":%d,"non2xx":%d}\n',
    summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9), latency.max,
    errors.connect, errors.read, errors.write, errors.timeout, errors.status))
end
