// Opens what `store` in the configuration asks for: the rate limiter, the usage meter, request ownership
// and the admission that combines the last two, in this process (`memory`, one replica) or on one shared
// Redis connection with one circuit breaker (`redis`). The caller closes it.
import type { GatewayConfig, TenantConfig } from '../config/schema.ts';
import { createJobEnds } from '../jobs/job-ends.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import { createRateLimitMetrics, rateLimitMetricsScope } from '../ratelimit/metrics.ts';
import type { GatewayStore, StoreBackend } from './gateway-store.ts';
import { openMemoryStore } from './memory/open-memory-store.ts';
import { createStoreMetrics, storeOperationsOf } from './metrics.ts';
import type { StoreLogger } from './redis/connection.ts';
import { openRedisStore } from './redis/open-redis-store.ts';

export async function openStore(
  store: GatewayConfig['store'],
  deps: { logger: StoreLogger; metrics: Pick<GatewayMetrics, 'registry' | 'usageReportedCost'> },
): Promise<GatewayStore> {
  const metrics = createRateLimitMetrics(
    deps.metrics.registry,
    rateLimitMetricsScope(store.kind, store.failMode),
  );
  const storeMetrics = createStoreMetrics(deps.metrics.registry, storeOperationsOf(store.kind));
  const onReportedCostCounted = (tenantId: string, costUsd: number) => {
    deps.metrics.usageReportedCost.labels(tenantId).inc(costUsd);
  };
  const backend: StoreBackend =
    store.kind === 'memory'
      ? openMemoryStore(store, { metrics, onReportedCostCounted })
      : await openRedisStore(store, { logger: deps.logger, metrics, storeMetrics, onReportedCostCounted });
  return {
    ...backend,
    jobEnds: createJobEnds(),
    startTenantCountersAtZero(tenants: readonly TenantConfig[]) {
      metrics.startTenantCountersAtZero(tenants);
    },
  };
}
