// What a create reserves at admission (docs/budgets.md): its expected cost, the tenant's budgets and the
// caps on jobs in flight, from the tenant's configuration and the validated, policy-adjusted body; and a
// refusal turned into its error. Every create the upstream may accept is reserved, with or without a
// budget: it is a job to follow to its end.
import type { GatewayConfig, TenantConfig } from '../config/schema.ts';
import type { RouteId } from '../config/route-ids.ts';
import { gatewayError, type GatewayError } from '../errors/registry.ts';
import type { JobReservation, ReservationRefusal } from './book.ts';
import type { JobRoute } from './job-ends.ts';
import { expectedCostMicroUsd, toMicroUsd, toUsd, type Prices } from '../usage/pricing.ts';

const MS_PER_SECOND = 1_000;

function isJobRoute(route: RouteId): route is JobRoute {
  return route === 'images.create' || route === 'videos.create';
}

export type PlanReservation = (
  tenant: TenantConfig,
  route: RouteId,
  body: Record<string, unknown> | undefined,
) => JobReservation | undefined;

/** `prices` are the ones usage estimates with too (src/gateway/pipeline.ts compiles them once). */
export function createReservationPlanner(
  prices: Prices,
  credentials: GatewayConfig['upstream']['credentials'],
): PlanReservation {
  return (tenant, route, body) => {
    if (!isJobRoute(route)) return undefined;
    const { budget } = tenant;
    return {
      route,
      credential: tenant.credential,
      // Without a price (only for a tenant without a budget: the configuration check) it costs nothing.
      costMicroUsd: expectedCostMicroUsd(prices, route, body) ?? 0,
      dailyMicroUsd: budget?.dailyUsd === undefined ? undefined : toMicroUsd(budget.dailyUsd),
      monthlyMicroUsd: budget?.monthlyUsd === undefined ? undefined : toMicroUsd(budget.monthlyUsd),
      tenantMaxInFlight: tenant.jobs?.maxInFlight,
      credentialMaxInFlight: credentials[tenant.credential]?.maxJobsInFlight,
    };
  };
}

/** The 429 of a refused reservation, with its Retry-After (seconds, at least 1). */
export function reservationRefusalError(
  refusal: ReservationRefusal,
  reservation: JobReservation,
  nowMs: number,
  jobRetryAfterSeconds: number,
): GatewayError {
  if (refusal.kind === 'too_many_jobs_in_flight') {
    return gatewayError(
      'too_many_jobs_in_flight',
      { scope: refusal.scope, limit: refusal.limit },
      { headers: { 'retry-after': String(Math.max(1, jobRetryAfterSeconds)) } },
    );
  }
  const limit = refusal.scope === 'daily' ? reservation.dailyMicroUsd : reservation.monthlyMicroUsd;
  const retryAfter = Math.max(1, Math.ceil((refusal.resetsAtMs - nowMs) / MS_PER_SECOND));
  return gatewayError(
    'budget_exceeded',
    {
      scope: refusal.scope,
      leftUsd: String(toUsd(refusal.remainingMicroUsd)),
      limitUsd: String(toUsd(limit ?? 0)),
      costUsd: String(toUsd(reservation.costMicroUsd)),
      resetsAt: new Date(refusal.resetsAtMs).toISOString(),
    },
    { headers: { 'retry-after': String(retryAfter) } },
  );
}
