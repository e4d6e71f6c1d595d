-- The budgets' calendar periods, UTC, from this server's clock (src/jobs/calendar.ts mirrors it).

-- Days since 1970-01-01 as year, month, day (the proleptic Gregorian calendar).
local function civil_from_days(days)
  local z = days + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local day = doy - math.floor((153 * mp + 2) / 5) + 1
  local month = mp < 10 and mp + 3 or mp - 9
  local year = yoe + era * 400 + (month <= 2 and 1 or 0)
  return year, month, day
end

-- Year, month, day as days since 1970-01-01.
local function days_from_civil(year, month, day)
  if month <= 2 then year = year - 1 end
  local era = math.floor(year / 400)
  local yoe = year - era * 400
  local mp = month > 2 and month - 3 or month + 9
  local doy = math.floor((153 * mp + 2) / 5) + day - 1
  return era * 146097 + yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy - 719468
end

-- The periods at `now_us`: the day's field prefix and its end (epoch ms), the month's and its end.
local function budget_periods(now_us)
  local days = math.floor(now_us / 86400000000)
  local year, month, day = civil_from_days(days)
  local next_year, next_month = year, month + 1
  if next_month > 12 then next_year, next_month = year + 1, 1 end
  return string.format('d:%04d-%02d-%02d', year, month, day), (days + 1) * 86400000,
    string.format('m:%04d-%02d', year, month), days_from_civil(next_year, next_month, 1) * 86400000
end
