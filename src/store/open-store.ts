// Opens what `store` in the configuration asks for: the rate limiter, the usage meter, request ownership
// and the admission that combines the last two, in this process (`memory`, one replica) or on one shared
// Redis connection with one circuit breaker (`redis`). The caller closes it.
import {
  DEFAULT_JOB_LEASE_MS,
  DEFAULT_JOB_MAX_AGE_SECONDS,
  DEFAULT_UPSTREAM_TIMEOUT_MS,
  type GatewayConfig,
  type TenantConfig,
} from '../config/schema.ts';
import { createJobEnds } from '../jobs/job-ends.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import { createRateLimitMetrics, rateLimitMetricsScope } from '../ratelimit/metrics.ts';
import { toUsd } from '../usage/pricing.ts';
import type { GatewayStore, StoreBackend, StoreJobOptions } from './gateway-store.ts';
import { openMemoryStore } from './memory/open-memory-store.ts';
import { createStoreMetrics, storeOperationsOf } from './metrics.ts';
import type { StoreLogger } from './redis/connection.ts';
import { openRedisStore } from './redis/open-redis-store.ts';

const MS_PER_SECOND = 1_000;

/** The job book's options from the whole configuration (what tests that build only `store` leave out). */
export function storeJobOptions(
  config: Pick<GatewayConfig, 'jobs' | 'upstream' | 'tenants'>,
): StoreJobOptions {
  return {
    // The upstream has answered or given up by then; a lease more and the replica that sent it is gone.
    answerWaitMs: config.upstream.timeoutMs + config.jobs.leaseMs,
    leaseMs: config.jobs.leaseMs,
    maxAgeMs: config.jobs.maxAgeSeconds * MS_PER_SECOND,
    credentials: () => Object.keys(config.upstream.credentials),
    budgets: config.tenants.some((tenant) => tenant.budget !== undefined),
  };
}

const DEFAULT_STORE_JOB_OPTIONS: StoreJobOptions = {
  answerWaitMs: DEFAULT_UPSTREAM_TIMEOUT_MS + DEFAULT_JOB_LEASE_MS,
  leaseMs: DEFAULT_JOB_LEASE_MS,
  maxAgeMs: DEFAULT_JOB_MAX_AGE_SECONDS * MS_PER_SECOND,
  credentials: () => [],
  budgets: false,
};

export async function openStore(
  store: GatewayConfig['store'],
  deps: {
    logger: StoreLogger;
    metrics: Pick<GatewayMetrics, 'registry' | 'usageReportedCost'>;
    jobs?: StoreJobOptions;
  },
): Promise<GatewayStore> {
  const jobs = deps.jobs ?? DEFAULT_STORE_JOB_OPTIONS;
  const metrics = createRateLimitMetrics(
    deps.metrics.registry,
    rateLimitMetricsScope(store.kind, store.failMode),
  );
  const storeMetrics = createStoreMetrics(deps.metrics.registry, storeOperationsOf(store.kind));
  const onReportedCostCounted = (tenantId: string, costMicroUsd: number) => {
    deps.metrics.usageReportedCost.labels(tenantId).inc(toUsd(costMicroUsd));
  };
  const backend: StoreBackend =
    store.kind === 'memory'
      ? openMemoryStore(store, { metrics, onReportedCostCounted, jobs })
      : await openRedisStore(store, {
          logger: deps.logger,
          metrics,
          storeMetrics,
          onReportedCostCounted,
          jobs,
        });
  return {
    ...backend,
    jobEnds: createJobEnds(),
    startTenantCountersAtZero(tenants: readonly TenantConfig[]) {
      metrics.startTenantCountersAtZero(tenants);
    },
  };
}
