-- Reserves one create's job (jobs.lua) without charging limits: the sequential admission's step, when the
-- admission script does not decide (admission.ts).
--
-- KEYS[1..5]     reservation_keys (jobs.lua).
-- ARGV[1]        the tenant.
-- ARGV[2..10]    read_reservation's values.
-- Returns        {'reserved'}, or reservation_refusal's reply.

--- @include "server-time"
--- @include "calendar"
--- @include "jobs"

local now_us = server_now()
local k, r = reservation_keys(KEYS, 1), read_reservation(ARGV, 2)
local refusal = reservation_refusal(k, r, now_us)
if refusal ~= nil then return refusal end
take_reservation(k, r, ARGV[1], now_us)
return {'reserved'}
