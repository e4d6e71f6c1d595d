// Rate-limit decision metrics (docs/operations.md, "Metrics"), registered on the registry the caller owns.
// Labels: tenant and limit ids come from configuration, decisions from the fixed sets below. Their counters
// start at 0 for the label values the store in use can produce (see RateLimitMetricsScope). The store's own
// metrics (round trips, errors, the breaker) are in src/store/metrics.ts.
import type { Registry } from 'prom-client';
import type { TenantConfig } from '../config/schema.ts';
import { CellCounter } from '../observability/cell-metrics.ts';
import type { LimitRequest, RateDecision } from './types.ts';

/** Verdicts the store decides exactly, whatever its kind. */
export const EXACT_DECISIONS = ['admitted', 'rate_limited', 'not_charged', 'cost_exceeds_limit'] as const;
/** While a Redis store fails open: the per-replica fallback limiter decides. */
const FALLBACK_DECISIONS = ['fallback_admitted', 'fallback_rate_limited', 'fallback_not_charged'] as const;
/** While a Redis store fails closed: every charge is refused. */
const FAIL_CLOSED_DECISIONS = ['store_unavailable'] as const;

/** Per limit: its own verdict; `fallback_` when decided by the per-replica fallback limiter. */
export type LimitDecisionLabel =
  | (typeof EXACT_DECISIONS)[number]
  | (typeof FALLBACK_DECISIONS)[number]
  | (typeof FAIL_CLOSED_DECISIONS)[number];

/** What the store in use can decide: the counters start at 0 for exactly these label values. */
export interface RateLimitMetricsScope {
  decisions: readonly LimitDecisionLabel[];
}

/** The scope of a store as configured: `memory` decides exactly and never fails; `redis` per its failMode. */
export function rateLimitMetricsScope(
  kind: 'memory' | 'redis',
  failMode: 'open' | 'closed',
): RateLimitMetricsScope {
  if (kind === 'memory') return { decisions: EXACT_DECISIONS };
  const whileFailing = failMode === 'open' ? FALLBACK_DECISIONS : FAIL_CLOSED_DECISIONS;
  return { decisions: [...EXACT_DECISIONS, ...whileFailing] };
}

export type RateLimitMetrics = ReturnType<typeof createRateLimitMetrics>;

export function createRateLimitMetrics(registry: Registry, scope: RateLimitMetricsScope) {
  const decisions = new CellCounter({
    name: 'gengate_rate_limit_decisions_total',
    help: 'Rate-limit verdicts per applicable limit; not_charged: the limit had room but another refused.',
    labelNames: ['tenant', 'limit', 'decision'] as const,
    registers: [registry],
  });
  return {
    /** Creates a 0 for every configured limit of these tenants and every decision the store can make. */
    startTenantCountersAtZero(tenants: readonly TenantConfig[]): void {
      for (const tenant of tenants) {
        for (const limit of tenant.limits) {
          for (const decision of scope.decisions) decisions.labels(tenant.id, limit.id, decision);
        }
      }
    },
    recordDecision(tenantId: string, decision: RateDecision, requests: readonly LimitRequest[]): void {
      for (const [index, request] of requests.entries()) {
        decisions.labels(tenantId, request.id, labelFor(decision, index, request)).inc();
      }
    },
  };
}

function labelFor(decision: RateDecision, index: number, request: LimitRequest): LimitDecisionLabel {
  switch (decision.outcome) {
    case 'store_unavailable':
      return 'store_unavailable';
    case 'cost_exceeds_limit':
      return request.cost > request.limit ? 'cost_exceeds_limit' : 'not_charged';
    case 'admitted':
      return decision.exact ? 'admitted' : 'fallback_admitted';
    case 'rate_limited': {
      const state = decision.limits[index];
      const refused = state !== undefined && state.remaining < state.cost;
      if (decision.exact) return refused ? 'rate_limited' : 'not_charged';
      return refused ? 'fallback_rate_limited' : 'fallback_not_charged';
    }
  }
}
