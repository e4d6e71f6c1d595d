// What a request costs against its tenant's limits (docs/rate-limits.md), and the limiter's decision
// turned into response headers or a refusal. Costs are read after validation and policy, so `samples` is
// the clamped value and a rejected request is never charged.
import type { RouteId } from '../config/route-ids.ts';
import type { TenantConfig, TenantLimit } from '../config/schema.ts';
import { gatewayError } from '../errors/registry.ts';
import { requestedSamples, requestedVideoSeconds } from '../maxai/request-values.ts';
import { rateLimitHeaders } from './headers.ts';
import type { LimitRequest, RateDecision, RateLimiter } from './types.ts';

// The route that carries each cost unit; `requests` is carried by every route.
const UNIT_ROUTE = { samples: 'images.create', videoSeconds: 'videos.create' } as const;

/** What this request costs against one limit, or undefined when the limit does not count this route. */
function costAgainst(limit: TenantLimit, route: RouteId, body: Record<string, unknown> | undefined) {
  const routes: readonly string[] = limit.routes;
  if (!routes.includes('*') && !routes.includes(route)) return undefined;
  switch (limit.cost) {
    case 'requests':
      return 1;
    case 'samples':
      return route === UNIT_ROUTE.samples ? requestedSamples(body) : undefined;
    case 'videoSeconds':
      return route === UNIT_ROUTE.videoSeconds ? requestedVideoSeconds(body) : undefined;
  }
}

export function applicableLimits(
  tenant: TenantConfig,
  route: RouteId,
  body: Record<string, unknown> | undefined,
): LimitRequest[] {
  const limits: LimitRequest[] = [];
  for (const limit of tenant.limits) {
    const cost = costAgainst(limit, route, body);
    if (cost !== undefined) {
      limits.push({ id: limit.id, limit: limit.limit, windowSeconds: limit.windowSeconds, cost });
    }
  }
  return limits;
}

/**
 * The decision for the request's log line: the binding limit (on a refusal the one that refused) and
 * the outcome, `fallback_` first when the per-replica fallback limiter decided (as the metric's label).
 */
export function limitLogFields(decision: RateDecision): { limit: string | undefined; decision: string } {
  const limit = decision.binding?.id ?? decision.exceeded?.id;
  const exact = decision.exact || decision.outcome === 'store_unavailable';
  return { limit, decision: exact ? decision.outcome : `fallback_${decision.outcome}` };
}

/** The rate-limit headers of an admitted charge; a refused one is thrown as its error, with its headers. */
export function limitHeadersOrRefusal(decision: RateDecision): Record<string, string> {
  const headers = rateLimitHeaders(decision);
  switch (decision.outcome) {
    case 'admitted':
      return headers;
    case 'rate_limited': {
      throw gatewayError('rate_limited', { limitId: decision.binding?.id }, { headers });
    }
    case 'cost_exceeds_limit': {
      const exceeded = decision.exceeded;
      throw exceeded === undefined
        ? gatewayError('cost_exceeds_unnamed_limit', { headers })
        : gatewayError('cost_exceeds_limit', exceeded, { headers });
    }
    case 'store_unavailable':
      throw gatewayError('rate_limit_store_unavailable', { headers });
  }
}

/**
 * The headers of the tenant's limits as they stand, charging nothing: for an idempotent replay, and for
 * an authenticated request refused before its charge (validation, policy, ownership), which still gets
 * the rate-limit headers of docs/rate-limits.md. Nothing when the store cannot say exactly.
 */
export async function peekTenantLimits(
  limiter: RateLimiter,
  tenant: TenantConfig,
  route: RouteId,
  body: Record<string, unknown> | undefined,
): Promise<Record<string, string>> {
  const limits = applicableLimits(tenant, route, body).map((limit) => ({ ...limit, cost: 0 }));
  if (limits.length === 0) return {};
  const decision = await limiter.check(tenant.id, limits, { peek: true });
  return decision.outcome === 'admitted' ? rateLimitHeaders(decision) : {};
}

/**
 * Before a body is read (`Expect: 100-continue`, src/gateway/expect-continue.ts): refuses, as admission
 * would, a request that some limit has no room for even at the smallest cost the route can have (one
 * request, one sample), without charging anything. Its Retry-After is when that limit has room for one
 * unit again: one unit's share of the window after the limit was full less one unit, rounded up, so
 * never early. Whatever the limiter cannot say exactly (the store failing) is left to admission.
 */
export async function assertRoomBeforeBody(
  limiter: RateLimiter,
  tenant: TenantConfig,
  route: RouteId,
): Promise<void> {
  const smallest = applicableLimits(tenant, route, undefined);
  if (smallest.length === 0) return;
  const peek = await limiter.check(
    tenant.id,
    smallest.map((limit) => ({ ...limit, cost: 0 })),
    { peek: true },
  );
  if (peek.outcome !== 'admitted' || !peek.exact) return;
  const full = peek.limits.find((state, index) => state.remaining < (smallest[index]?.cost ?? 0));
  if (full === undefined) return;
  const unitSeconds = full.windowSeconds / full.limit;
  limitHeadersOrRefusal({
    ...peek,
    outcome: 'rate_limited',
    binding: full,
    retryAfterSeconds: Math.max(1, Math.ceil(full.secondsUntilFull - full.windowSeconds + unitSeconds)),
  });
}
