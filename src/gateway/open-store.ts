// Opens what `store` in the configuration asks for: the rate limiter, the usage meter, request ownership
// and the admission that combines the last two, in this process (`memory`, one replica) or on one shared
// Redis connection with one circuit breaker (`redis`). The caller closes it.
import type { FastifyBaseLogger } from 'fastify';
import { Cluster } from 'ioredis';
import { createSequentialAdmission, type Admission } from '../admission/admission.ts';
import { createRedisAdmission } from '../admission/redis-admission.ts';
import type { GatewayConfig, TenantConfig } from '../config/schema.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import { createMemoryOwnershipStore } from '../ownership/memory-store.ts';
import { createRedisOwnershipStore, defineUndoClaim } from '../ownership/redis-store.ts';
import type { OwnershipStore } from '../ownership/store.ts';
import { createMemoryRateLimiter } from '../ratelimit/memory-limiter.ts';
import { createRateLimitMetrics, rateLimitMetricsScope } from '../ratelimit/metrics.ts';
import { createRedisRateLimiter } from '../ratelimit/redis-limiter.ts';
import type { RateLimiter } from '../ratelimit/types.ts';
import { createMemoryUsageMeter, type UsageMeter } from '../usage/meter.ts';
import { createRedisUsageMeter } from '../usage/redis-meter.ts';
import { createConnectionBreaker } from '../store/circuit-breaker.ts';
import { createRedisConnection, waitUntilConnected } from '../store/redis.ts';
import { createStoreClock, learnClockOnConnect } from '../store/store-clock.ts';
import { createUndoOnRecovery } from '../store/undo-on-recovery.ts';

// Start-up only: long enough for a healthy Redis, short enough that a dead one does not hold the
// process (fail-open replicas serve from the fallback; fail-closed ones stay not ready).
const STARTUP_CONNECT_WAIT_MS = 2_000;

export interface GatewayStore {
  limiter: RateLimiter;
  usage: UsageMeter;
  ownership: OwnershipStore;
  admission: Admission;
  /** Starts the rate-limit decision counters of these tenants' limits at 0 (at start-up and on reload). */
  startTenantCountersAtZero(tenants: readonly TenantConfig[]): void;
  close(): Promise<void>;
}

export async function openStore(
  store: GatewayConfig['store'],
  deps: { logger: FastifyBaseLogger; metrics: Pick<GatewayMetrics, 'registry' | 'usageReportedCost'> },
): Promise<GatewayStore> {
  const metrics = createRateLimitMetrics(
    deps.metrics.registry,
    rateLimitMetricsScope(store.kind, store.failMode),
  );
  const startTenantCountersAtZero = (tenants: readonly TenantConfig[]) => {
    metrics.startTenantCountersAtZero(tenants);
  };
  const onReportedCostCounted = (tenantId: string, costUsd: number) => {
    deps.metrics.usageReportedCost.inc({ tenant: tenantId }, costUsd);
  };
  if (store.kind === 'memory') {
    const limiter = createMemoryRateLimiter({ metrics });
    const usage = createMemoryUsageMeter(onReportedCostCounted);
    const ownership = createMemoryOwnershipStore({ ttlMs: store.ownershipTtlSeconds * 1000 });
    return {
      limiter,
      usage,
      ownership,
      admission: createSequentialAdmission(ownership, limiter),
      startTenantCountersAtZero,
      close: async () => {
        await Promise.all([limiter.close(), usage.close(), ownership.close()]);
      },
    };
  }
  const connection = createRedisConnection(
    {
      url: store.redis.url,
      ...(store.redis.nodes === undefined ? {} : { nodes: store.redis.nodes }),
      keyPrefix: store.redis.keyPrefix,
      commandTimeoutMs: store.redis.commandTimeoutMs,
    },
    deps.logger,
  );
  const clock = createStoreClock();
  learnClockOnConnect(connection, clock);
  await waitUntilConnected(connection, STARTUP_CONNECT_WAIT_MS).catch(() => {
    deps.logger.warn({}, 'store not reachable at start-up; serving per its failMode until it is');
  });
  const { commandTimeoutMs } = store.redis;
  const ownershipTtlMs = store.ownershipTtlSeconds * 1000;
  const breaker = createConnectionBreaker(connection, {
    commandTimeoutMs,
    observeStore: metrics.observeStore,
  });
  breaker.onChange((open) => {
    if (open) metrics.recordBreakerTrip();
  });
  // Before any other listener of the breaker: undos go out first when the store answers again.
  const undos = createUndoOnRecovery(breaker, deps.logger);
  const undoClaim = defineUndoClaim(connection);
  const limiter = createRedisRateLimiter({
    connection,
    breaker,
    commandTimeoutMs,
    failMode: store.failMode,
    fallbackReplicas: store.replicas,
    metrics,
    clock,
    logger: deps.logger,
  });
  const usage = createRedisUsageMeter({
    connection,
    commandTimeoutMs,
    logger: deps.logger,
    observeStore: metrics.observeStore,
    onReportedCostCounted,
  });
  const ownership = createRedisOwnershipStore({
    connection,
    breaker,
    commandTimeoutMs,
    failMode: store.failMode,
    ttlMs: ownershipTtlMs,
    logger: deps.logger,
    observeStore: metrics.observeStore,
    clock,
    undos,
    undoClaim,
  });
  // In a Cluster an id's key and a tenant's limit keys hash to different slots: no single script.
  const admission =
    connection instanceof Cluster
      ? createSequentialAdmission(ownership, limiter)
      : createRedisAdmission({
          connection,
          breaker,
          commandTimeoutMs,
          ownership,
          ownershipTtlMs,
          limiter,
          metrics,
          logger: deps.logger,
          clock,
          undos,
          undoClaim,
        });
  return {
    limiter,
    usage,
    ownership,
    admission,
    startTenantCountersAtZero,
    async close() {
      breaker.stop();
      await Promise.all([limiter.close(), usage.close(), ownership.close()]);
      connection.disconnect();
    },
  };
}
