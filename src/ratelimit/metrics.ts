// Rate-limit and store metrics (contract section 10), registered on the registry the caller owns.
// Labels: tenant and limit ids come from configuration, decisions from the fixed sets below, operations
// from src/store/operations.ts.
// Their counters start at 0 for the label values the store in use can produce (see RateLimitMetricsScope).
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { TenantConfig } from '../config/schema.ts';
import { STORE_OPERATIONS, type ObserveStore, type StoreOperation } from '../store/operations.ts';
import type { LimitRequest, RateDecision } from './types.ts';

// Store round trips are sub-millisecond when healthy and bounded by commandTimeoutMs when not.
const STORE_LATENCY_BUCKETS_SECONDS = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1,
];

/** Verdicts the store decides exactly, whatever its kind. */
export const EXACT_DECISIONS = ['admitted', 'rate_limited', 'not_charged', 'cost_exceeds_limit'] as const;
/** While a Redis store fails open: the per-replica fallback limiter decides. */
export const FALLBACK_DECISIONS = [
  'fallback_admitted',
  'fallback_rate_limited',
  'fallback_not_charged',
] as const;
/** While a Redis store fails closed: every charge is refused. */
export const FAIL_CLOSED_DECISIONS = ['store_unavailable'] as const;

/** Per limit: its own verdict; `fallback_` when decided by the per-replica fallback limiter. */
export type LimitDecisionLabel =
  | (typeof EXACT_DECISIONS)[number]
  | (typeof FALLBACK_DECISIONS)[number]
  | (typeof FAIL_CLOSED_DECISIONS)[number];

/** What the store in use can report: the counters start at 0 for exactly these label values. */
export interface RateLimitMetricsScope {
  decisions: readonly LimitDecisionLabel[];
  /** The operations sent to a shared store; none for a store in this process, which cannot fail. */
  storeOperations: readonly StoreOperation[];
}

/** The scope of a store as configured: `memory` decides exactly and never fails; `redis` per its failMode. */
export function rateLimitMetricsScope(
  kind: 'memory' | 'redis',
  failMode: 'open' | 'closed',
): RateLimitMetricsScope {
  if (kind === 'memory') return { decisions: EXACT_DECISIONS, storeOperations: [] };
  const whileFailing = failMode === 'open' ? FALLBACK_DECISIONS : FAIL_CLOSED_DECISIONS;
  return { decisions: [...EXACT_DECISIONS, ...whileFailing], storeOperations: STORE_OPERATIONS };
}

export type RateLimitMetrics = ReturnType<typeof createRateLimitMetrics>;

export function createRateLimitMetrics(registry: Registry, scope: RateLimitMetricsScope) {
  const decisions = new Counter({
    name: 'gengate_rate_limit_decisions_total',
    help: 'Rate-limit verdicts per applicable limit; not_charged: the limit had room but another refused.',
    labelNames: ['tenant', 'limit', 'decision'] as const,
    registers: [registry],
  });
  const storeDuration = new Histogram({
    name: 'gengate_store_operation_duration_seconds',
    help: 'Time waiting on the shared store, failures included.',
    labelNames: ['operation'] as const,
    buckets: STORE_LATENCY_BUCKETS_SECONDS,
    registers: [registry],
  });
  const storeErrors = new Counter({
    name: 'gengate_store_errors_total',
    help: 'Store operations that failed or timed out.',
    labelNames: ['operation'] as const,
    registers: [registry],
  });
  for (const operation of scope.storeOperations) storeErrors.inc({ operation }, 0);
  const storeDegraded = new Gauge({
    name: 'gengate_store_degraded',
    help: '1 while the shared store is failing and rate limits are served by fallback or refused.',
    registers: [registry],
  });
  storeDegraded.set(0);
  const breakerTrips = new Counter({
    name: 'gengate_store_breaker_trips_total',
    help: 'Times the store circuit breaker opened: requests bypassed the store until a probe succeeded.',
    registers: [registry],
  });
  return {
    /** Creates a 0 for every configured limit of these tenants and every decision the store can make. */
    startTenantCountersAtZero(tenants: readonly TenantConfig[]): void {
      for (const tenant of tenants) {
        for (const limit of tenant.limits) {
          for (const decision of scope.decisions) {
            decisions.inc({ tenant: tenant.id, limit: limit.id, decision }, 0);
          }
        }
      }
    },
    recordDecision(tenantId: string, decision: RateDecision, requests: readonly LimitRequest[]): void {
      for (const [index, request] of requests.entries()) {
        decisions.inc({ tenant: tenantId, limit: request.id, decision: labelFor(decision, index, request) });
      }
    },
    observeStore: ((operation, seconds, failed) => {
      storeDuration.observe({ operation }, seconds);
      if (failed) storeErrors.inc({ operation });
    }) satisfies ObserveStore,
    setDegraded(degraded: boolean): void {
      storeDegraded.set(degraded ? 1 : 0);
    },
    recordBreakerTrip(): void {
      breakerTrips.inc();
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
