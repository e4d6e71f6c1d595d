// The jobs' and budgets' metrics (docs/operations.md, "Metrics"; names fixed by the contract). Labels come
// from configuration (tenants, credentials) and fixed sets (outcomes, poll results), so series stay
// bounded. The gauges of what the store holds (reserved USD, jobs in flight) are read from the store when
// Prometheus scrapes, one call per configured tenant and credential. Tenants and their budgets are those of
// the configuration applied last: a reload hands them over like every per-tenant series'
// (src/gateway/tenant-series.ts), so a tenant it adds has its counters at 0 at once.
import { Counter, Gauge, Histogram } from 'prom-client';
import type { RouteId } from '../config/route-ids.ts';
import type { TenantConfig } from '../config/schema.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import type { JobBook, SettledJob } from './book.ts';
import type { JobOutcome } from './job-ends.ts';
import { toMicroUsd, toUsd } from '../usage/pricing.ts';
import { POLL_RESULTS, type PollResult } from './tracker.ts';

export const JOB_OUTCOMES: readonly JobOutcome[] = ['completed', 'failed', 'cancelled', 'expired'];
const JOB_ROUTES: readonly RouteId[] = ['images.create', 'videos.create'];
// From a few seconds (an image) to the longest a job is followed (a day by default).
const JOB_DURATION_BUCKETS_SECONDS = [1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600, 21_600, 86_400];
const MS_PER_SECOND = 1_000;

/** A tenant's budget limits, micro-USD. */
interface TenantBudget {
  tenant: string;
  daily: number | undefined;
  monthly: number | undefined;
}

function budgetsOf(tenants: readonly TenantConfig[]): TenantBudget[] {
  return tenants.flatMap(({ id, budget }) =>
    budget === undefined
      ? []
      : [
          {
            tenant: id,
            daily: budget.dailyUsd === undefined ? undefined : toMicroUsd(budget.dailyUsd),
            monthly: budget.monthlyUsd === undefined ? undefined : toMicroUsd(budget.monthlyUsd),
          },
        ],
  );
}

export type JobMetrics = ReturnType<typeof createJobMetrics>;

/** The credentials are fixed at start (a reload changes tenants only); the tenants come from `metrics`. */
export function createJobMetrics(
  metrics: Pick<GatewayMetrics, 'registry' | 'addTenantSeries'>,
  jobs: JobBook,
  credentials: readonly string[],
) {
  const { registry } = metrics;
  const spent = new Counter({
    name: 'gengate_budget_spent_usd_total',
    help: 'USD settled as spent: the upstream-reported cost of completed jobs, the estimate of expired ones.',
    labelNames: ['tenant'] as const,
    registers: [registry],
  });
  const unreserved = new Counter({
    name: 'gengate_budget_unreserved_admissions_total',
    help: 'Creates admitted without a reservation while the store failed (failMode open).',
    labelNames: ['tenant'] as const,
    registers: [registry],
  });
  const dropped = new Counter({
    name: 'gengate_budget_unreserved_dropped_total',
    help: 'Creates admitted without a reservation that will not be followed: past the bound kept per replica, or possibly settled already.',
    labelNames: ['tenant'] as const,
    registers: [registry],
  });
  const finished = new Counter({
    name: 'gengate_jobs_finished_total',
    help: 'Jobs settled, by outcome (completed, failed, cancelled, expired).',
    labelNames: ['tenant', 'outcome'] as const,
    registers: [registry],
  });
  let tenantIds: readonly string[] = [];
  let budgets: readonly TenantBudget[] = [];
  const duration = new Histogram({
    name: 'gengate_job_duration_seconds',
    help: 'Time from a job admitted to its settlement.',
    labelNames: ['route'] as const,
    buckets: JOB_DURATION_BUCKETS_SECONDS,
    registers: [registry],
  });
  for (const route of JOB_ROUTES) duration.zero({ route });
  const polls = new Counter({
    name: 'gengate_tracker_polls_total',
    help: "The job tracker's upstream polls, by credential and result.",
    labelNames: ['credential', 'result'] as const,
    registers: [registry],
  });
  for (const credential of credentials) {
    for (const result of POLL_RESULTS) polls.inc({ credential, result }, 0);
  }
  const backlog = new Gauge({
    name: 'gengate_tracker_backlog',
    help: 'Jobs followed and not yet settled and told, over every replica (as of this replica’s last turn).',
    registers: [registry],
  });
  const oldestAge = new Gauge({
    name: 'gengate_tracker_oldest_job_age_seconds',
    help: 'Age of the oldest job followed (as of this replica’s last turn); 0 when none.',
    registers: [registry],
  });
  backlog.set(0);
  oldestAge.set(0);
  const reserved = new Gauge({
    name: 'gengate_budget_reserved_usd',
    help: 'USD reserved by jobs in flight, per tenant (reserved this calendar month).',
    labelNames: ['tenant'] as const,
    registers: [registry],
    async collect() {
      for (const tenant of tenantIds) {
        // Any limit: the month's reserved amount is kept whether or not the tenant has a budget.
        const usage = await jobs.usage(tenant, undefined, 0).catch(() => undefined);
        this.set({ tenant }, toUsd(usage?.monthly?.reservedMicroUsd ?? 0));
      }
    },
  });
  const usedRatio = new Gauge({
    name: 'gengate_budget_used_ratio',
    help: "Share of a tenant's budget spent or reserved in the current period (UTC day or month).",
    labelNames: ['tenant', 'scope'] as const,
    registers: [registry],
    async collect() {
      for (const { tenant, daily, monthly } of budgets) {
        const usage = await jobs.usage(tenant, daily, monthly).catch(() => undefined);
        for (const [name, period] of [
          ['daily', usage?.daily],
          ['monthly', usage?.monthly],
        ] as const) {
          if (period === undefined || period.limitMicroUsd === 0) continue;
          const used = period.reservedMicroUsd + period.spentMicroUsd;
          this.set({ tenant, scope: name }, used / period.limitMicroUsd);
        }
      }
    },
  });
  const inFlight = new Gauge({
    name: 'gengate_jobs_in_flight',
    help: 'Jobs admitted and not yet settled, per tenant.',
    labelNames: ['tenant'] as const,
    registers: [registry],
    async collect() {
      for (const tenant of tenantIds) {
        const usage = await jobs.usage(tenant, undefined, undefined).catch(() => undefined);
        this.set({ tenant }, usage?.jobsInFlight ?? 0);
      }
    },
  });
  new Gauge({
    name: 'gengate_credential_jobs_in_flight',
    help: 'Jobs admitted and not yet settled, per upstream credential (shared by its tenants).',
    labelNames: ['credential'] as const,
    registers: [registry],
    async collect() {
      for (const credential of credentials) {
        this.set({ credential }, await jobs.credentialJobsInFlight(credential).catch(() => 0));
      }
    },
  });
  // At start and on each reload: every tenant's counters start at 0, and the gauges read the tenants and
  // budgets of that configuration (the series of a tenant or budget it removed go; a counter's stay).
  metrics.addTenantSeries((tenants) => {
    tenantIds = tenants.map((tenant) => tenant.id);
    budgets = budgetsOf(tenants);
    for (const gauge of [reserved, usedRatio, inFlight]) gauge.reset();
    for (const tenant of tenantIds) {
      spent.inc({ tenant }, 0);
      unreserved.inc({ tenant }, 0);
      dropped.inc({ tenant }, 0);
      for (const outcome of JOB_OUTCOMES) finished.inc({ tenant, outcome }, 0);
    }
  });

  return {
    countSettled: (settled: SettledJob, nowMs: number): void => {
      const { end } = settled;
      finished.inc({ tenant: end.tenant, outcome: end.outcome });
      if (settled.spentMicroUsd !== 0) spent.inc({ tenant: end.tenant }, toUsd(settled.spentMicroUsd));
      duration.observe({ route: end.route }, Math.max(0, nowMs - settled.admittedAtMs) / MS_PER_SECOND);
    },
    countUnreserved: (tenant: string): void => {
      unreserved.inc({ tenant });
    },
    countUnreservedDropped: (tenant: string): void => {
      dropped.inc({ tenant });
    },
    countPoll: (credential: string, result: PollResult): void => {
      polls.inc({ credential, result });
    },
    reportBacklog: (count: number, oldest: number | undefined, nowMs: number): void => {
      backlog.set(count);
      oldestAge.set(oldest === undefined ? 0 : Math.max(0, nowMs - oldest) / MS_PER_SECOND);
    },
  };
}
