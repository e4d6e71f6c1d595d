// store.kind memory: every part of the store in this process, for one replica.
import { createSequentialAdmission } from '../../admission/admission.ts';
import type { GatewayConfig } from '../../config/schema.ts';
import type { RateLimitMetrics } from '../../ratelimit/metrics.ts';
import type { OnReportedCostCounted } from '../../usage/meter.ts';
import type { StoreBackend, StoreJobOptions } from '../gateway-store.ts';
import { createMemoryJobBook } from './job-book.ts';
import { createMemoryOwnershipStore } from './ownership-store.ts';
import { createMemoryRateLimiter } from './rate-limiter.ts';
import { createMemoryUsageMeter } from './usage-meter.ts';

export function openMemoryStore(
  store: GatewayConfig['store'],
  deps: { metrics: RateLimitMetrics; onReportedCostCounted: OnReportedCostCounted; jobs: StoreJobOptions },
): StoreBackend {
  const limiter = createMemoryRateLimiter({ metrics: deps.metrics });
  const usage = createMemoryUsageMeter(deps.onReportedCostCounted);
  const ownership = createMemoryOwnershipStore({ ttlMs: store.ownershipTtlSeconds * 1000 });
  const jobs = createMemoryJobBook(deps.jobs);
  return {
    limiter,
    usage,
    ownership,
    jobs,
    admission: createSequentialAdmission(ownership, limiter, jobs),
    close: async () => {
      await Promise.all([limiter.close(), usage.close(), ownership.close()]);
    },
  };
}
