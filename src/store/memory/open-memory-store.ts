// store.kind memory: every part of the store in this process, for one replica.
import { createSequentialAdmission } from '../../admission/admission.ts';
import type { GatewayConfig } from '../../config/schema.ts';
import type { RateLimitMetrics } from '../../ratelimit/metrics.ts';
import type { OnReportedCostCounted } from '../../usage/meter.ts';
import type { StoreBackend } from '../gateway-store.ts';
import { createMemoryOwnershipStore } from './ownership-store.ts';
import { createMemoryRateLimiter } from './rate-limiter.ts';
import { createMemoryUsageMeter } from './usage-meter.ts';

export function openMemoryStore(
  store: GatewayConfig['store'],
  deps: { metrics: RateLimitMetrics; onReportedCostCounted: OnReportedCostCounted },
): StoreBackend {
  const limiter = createMemoryRateLimiter({ metrics: deps.metrics });
  const usage = createMemoryUsageMeter(deps.onReportedCostCounted);
  const ownership = createMemoryOwnershipStore({ ttlMs: store.ownershipTtlSeconds * 1000 });
  return {
    limiter,
    usage,
    ownership,
    admission: createSequentialAdmission(ownership, limiter),
    close: async () => {
      await Promise.all([limiter.close(), usage.close(), ownership.close()]);
    },
  };
}
