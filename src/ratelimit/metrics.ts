// Rate-limit and store metrics (contract section 10), registered on the registry the caller owns.
// Labels: tenant and limit ids come from configuration, decisions and operations from the fixed sets below.
import { Counter, Gauge, type Registry } from 'prom-client';
import { CellCounter, CellHistogram } from '../observability/cell-metrics.ts';
import type { LimitRequest, RateDecision } from './types.ts';

// Store round trips are sub-millisecond when healthy and bounded by commandTimeoutMs when not.
const STORE_LATENCY_BUCKETS_SECONDS = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1,
];

/** Per limit: its own verdict; `fallback_` when decided by the per-replica fallback limiter. */
export type LimitDecisionLabel =
  | 'admitted'
  | 'rate_limited'
  | 'not_charged'
  | 'cost_exceeds_limit'
  | 'store_unavailable'
  | 'fallback_admitted'
  | 'fallback_rate_limited'
  | 'fallback_not_charged';

/** `admission`: a request id checked and the limits charged in one call (src/admission/redis-admission.ts). */
export type StoreOperation =
  'admission' | 'rate_limit_check' | 'ping' | 'ownership' | 'usage_flush' | 'usage_read';

/** Where a store user reports each round trip: gengate_store_operation_duration_seconds and _errors_total. */
export type ObserveStore = (operation: StoreOperation, seconds: number, failed: boolean) => void;

export type RateLimitMetrics = ReturnType<typeof createRateLimitMetrics>;

export function createRateLimitMetrics(registry: Registry) {
  const decisions = new CellCounter({
    name: 'gengate_rate_limit_decisions_total',
    help: 'Rate-limit verdicts per applicable limit; not_charged: the limit had room but another refused.',
    labelNames: ['tenant', 'limit', 'decision'] as const,
    registers: [registry],
  });
  const storeDuration = new CellHistogram({
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
  const storeDegraded = new Gauge({
    name: 'gengate_store_degraded',
    help: '1 while the shared store is failing and rate limits are served by fallback or refused.',
    registers: [registry],
  });
  storeDegraded.set(0);
  return {
    recordDecision(tenantId: string, decision: RateDecision, requests: readonly LimitRequest[]): void {
      for (const [index, request] of requests.entries()) {
        decisions.labels(tenantId, request.id, labelFor(decision, index, request)).inc();
      }
    },
    observeStore: ((operation, seconds, failed) => {
      storeDuration.labels(operation).observe(seconds);
      if (failed) storeErrors.inc({ operation });
    }) satisfies ObserveStore,
    setDegraded(degraded: boolean): void {
      storeDegraded.set(degraded ? 1 : 0);
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
