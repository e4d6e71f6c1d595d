// The budgets' calendar periods, UTC (docs/budgets.md); scripts/includes/calendar.lua computes the same
// from the Redis server's clock.

export interface BudgetPeriods {
  /** Field prefixes: `d:2026-11-26`, `m:2026-11`. */
  day: string;
  dayEndMs: number;
  month: string;
  monthEndMs: number;
}

export function budgetPeriods(nowMs: number): BudgetPeriods {
  const now = new Date(nowMs);
  const year = now.getUTCFullYear();
  const month = now.getUTCMonth();
  const date = now.getUTCDate();
  const iso = now.toISOString();
  return {
    day: `d:${iso.slice(0, 10)}`,
    dayEndMs: Date.UTC(year, month, date + 1),
    month: `m:${iso.slice(0, 7)}`,
    monthEndMs: Date.UTC(year, month + 1, 1),
  };
}
