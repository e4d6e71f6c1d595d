// The budgets' calendar periods, UTC (docs/budgets.md); scripts/includes/calendar.lua computes the same
// from the Redis server's clock.

export interface BudgetPeriods {
  /** Field prefixes: `d:2026-11-26`, `m:2026-11`. */
  day: string;
  dayEndMs: number;
  month: string;
  monthEndMs: number;
}

// Every reservation asks for the periods of "now": the last answer serves until its day ends.
let lastPeriods: (BudgetPeriods & { dayStartMs: number }) | undefined;

export function budgetPeriods(nowMs: number): BudgetPeriods {
  if (lastPeriods !== undefined && nowMs >= lastPeriods.dayStartMs && nowMs < lastPeriods.dayEndMs) {
    return lastPeriods;
  }
  const now = new Date(nowMs);
  const year = now.getUTCFullYear();
  const month = now.getUTCMonth();
  const date = now.getUTCDate();
  const iso = now.toISOString();
  lastPeriods = {
    day: `d:${iso.slice(0, 10)}`,
    dayStartMs: Date.UTC(year, month, date),
    dayEndMs: Date.UTC(year, month, date + 1),
    month: `m:${iso.slice(0, 7)}`,
    monthEndMs: Date.UTC(year, month + 1, 1),
  };
  return lastPeriods;
}
