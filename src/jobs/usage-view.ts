// account.usage's budget members (docs/budgets.md): for each budget scope its limit, what is reserved by
// jobs in flight, what was spent (settled), what remains and when the period resets; and the tenant's jobs
// in flight. A scope without a budget is null. USD from exact micro-USD integers.
import type { TenantConfig } from '../config/schema.ts';
import type { BudgetPeriodUsage, JobBook } from './book.ts';
import { toMicroUsd, toUsd } from '../usage/pricing.ts';

function periodView(period: BudgetPeriodUsage | undefined) {
  if (period === undefined) return null;
  const { limitMicroUsd, reservedMicroUsd, spentMicroUsd } = period;
  return {
    limitUsd: toUsd(limitMicroUsd),
    reservedUsd: toUsd(reservedMicroUsd),
    spentUsd: toUsd(spentMicroUsd),
    remainingUsd: toUsd(Math.max(0, limitMicroUsd - reservedMicroUsd - spentMicroUsd)),
    resetsAt: new Date(period.resetsAtMs).toISOString(),
  };
}

export async function budgetView(jobs: JobBook, tenant: TenantConfig) {
  const daily = tenant.budget?.dailyUsd;
  const monthly = tenant.budget?.monthlyUsd;
  const usage = await jobs.usage(
    tenant.id,
    daily === undefined ? undefined : toMicroUsd(daily),
    monthly === undefined ? undefined : toMicroUsd(monthly),
  );
  return {
    budget: { daily: periodView(usage.daily), monthly: periodView(usage.monthly) },
    jobsInFlight: usage.jobsInFlight,
  };
}
