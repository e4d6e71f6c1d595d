// Opens what `store` in the configuration asks for: the rate limiter, the usage meter and request
// ownership, in this process (`memory`, one replica) or on one shared Redis connection (`redis`).
// The caller closes it.
import type { FastifyBaseLogger } from 'fastify';
import type { Registry } from 'prom-client';
import type { GatewayConfig } from '../config/schema.ts';
import { createMemoryOwnershipStore } from '../ownership/memory-store.ts';
import { createRedisOwnershipStore } from '../ownership/redis-store.ts';
import type { OwnershipStore } from '../ownership/store.ts';
import { createMemoryRateLimiter } from '../ratelimit/memory-limiter.ts';
import { createRateLimitMetrics } from '../ratelimit/metrics.ts';
import { createRedisRateLimiter } from '../ratelimit/redis-limiter.ts';
import type { RateLimiter } from '../ratelimit/types.ts';
import { createMemoryUsageMeter, type UsageMeter } from '../usage/meter.ts';
import { createRedisUsageMeter } from '../usage/redis-meter.ts';
import { createRedisConnection, waitUntilConnected } from './redis.ts';

// Start-up only: long enough for a healthy Redis, short enough that a dead one does not hold the
// process (fail-open replicas serve from the fallback; fail-closed ones stay not ready).
const STARTUP_CONNECT_WAIT_MS = 2_000;

export interface GatewayStore {
  limiter: RateLimiter;
  usage: UsageMeter;
  ownership: OwnershipStore;
  close(): Promise<void>;
}

export async function openStore(
  store: GatewayConfig['store'],
  deps: { logger: FastifyBaseLogger; registry: Registry },
): Promise<GatewayStore> {
  const metrics = createRateLimitMetrics(deps.registry);
  if (store.kind === 'memory') {
    const limiter = createMemoryRateLimiter({ metrics });
    const usage = createMemoryUsageMeter();
    const ownership = createMemoryOwnershipStore({ ttlMs: store.ownershipTtlSeconds * 1000 });
    return {
      limiter,
      usage,
      ownership,
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
  await waitUntilConnected(connection, STARTUP_CONNECT_WAIT_MS).catch(() => {
    deps.logger.warn({}, 'store not reachable at start-up; serving per its failMode until it is');
  });
  const limiter = createRedisRateLimiter({
    connection,
    commandTimeoutMs: store.redis.commandTimeoutMs,
    failMode: store.failMode,
    fallbackReplicas: store.replicas,
    metrics,
    logger: deps.logger,
  });
  const usage = createRedisUsageMeter({
    connection,
    commandTimeoutMs: store.redis.commandTimeoutMs,
    logger: deps.logger,
    observeStore: metrics.observeStore,
  });
  const ownership = createRedisOwnershipStore({
    connection,
    commandTimeoutMs: store.redis.commandTimeoutMs,
    failMode: store.failMode,
    ttlMs: store.ownershipTtlSeconds * 1000,
    logger: deps.logger,
    observeStore: metrics.observeStore,
  });
  return {
    limiter,
    usage,
    ownership,
    async close() {
      await Promise.all([limiter.close(), usage.close(), ownership.close()]);
      connection.disconnect();
    },
  };
}
