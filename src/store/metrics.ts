// The store's metrics (docs/operations.md, "Metrics"), registered on the registry the caller owns. Every part
// that talks to the shared store (rate limits, ownership, usage, admission, the breaker's probe) reports each
// round trip through an ObserveStore, so the store's timing is measured the same way whoever sends the
// command; the breaker's state and trips are the store's too, whichever of its users tripped it. Operations
// come from the fixed set below; their error counters start at 0 for the store in use.
import { Counter, Gauge, type Registry } from 'prom-client';
import { CellHistogram } from '../observability/cell-metrics.ts';
import type { StoreBreaker } from './redis/circuit-breaker.ts';

/**
 * `admission`: a request id checked, the limits charged and a create's job reserved in one call
 * (src/store/redis/admission.ts); `jobs`: the job tracker's calls (src/store/redis/job-book.ts).
 */
export const STORE_OPERATIONS = [
  'admission',
  'rate_limit_check',
  'ping',
  'ownership',
  'usage_flush',
  'usage_read',
  'jobs',
] as const;
export type StoreOperation = (typeof STORE_OPERATIONS)[number];

/** Where a store user reports each round trip: gengate_store_operation_duration_seconds and _errors_total. */
export type ObserveStore = (operation: StoreOperation, seconds: number, failed: boolean) => void;

// Store round trips are sub-millisecond when healthy and bounded by commandTimeoutMs when not.
const STORE_LATENCY_BUCKETS_SECONDS = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1,
];

/** The operations a store of this kind sends: none for a store in this process, which cannot fail. */
export function storeOperationsOf(kind: 'memory' | 'redis'): readonly StoreOperation[] {
  return kind === 'memory' ? [] : STORE_OPERATIONS;
}

export type StoreMetrics = ReturnType<typeof createStoreMetrics>;

export function createStoreMetrics(registry: Registry, operations: readonly StoreOperation[]) {
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
  for (const operation of operations) storeErrors.inc({ operation }, 0);
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
    observeStore: ((operation, seconds, failed) => {
      storeDuration.labels(operation).observe(seconds);
      if (failed) storeErrors.inc({ operation });
    }) satisfies ObserveStore,
    /** Degraded while `breaker` is open; each opening counts as a trip. */
    observeBreaker(breaker: StoreBreaker): void {
      breaker.onChange((open) => {
        storeDegraded.set(open ? 1 : 0);
        if (open) breakerTrips.inc();
      });
    },
  };
}
