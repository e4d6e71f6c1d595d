// Builds the rate limiter that `store` in the configuration asks for. The caller closes it.
import type { Registry } from 'prom-client';
import type { GatewayConfig } from '../config/schema.ts';
import { createRedisConnection, waitUntilConnected, type StoreLogger } from '../store/redis.ts';
import { createMemoryRateLimiter } from './memory-limiter.ts';
import { createRateLimitMetrics } from './metrics.ts';
import { createRedisRateLimiter } from './redis-limiter.ts';
import type { RateLimiter } from './types.ts';

// Start-up only: long enough for a healthy Redis, short enough that a dead one does not hold the
// process (fail-open replicas serve from the fallback; fail-closed ones stay not ready).
const STARTUP_CONNECT_WAIT_MS = 2_000;

export interface ConfiguredRateLimiter {
  limiter: RateLimiter;
  close(): Promise<void>;
}

export async function createConfiguredRateLimiter(
  store: GatewayConfig['store'],
  deps: { logger: StoreLogger; registry: Registry },
): Promise<ConfiguredRateLimiter> {
  const metrics = createRateLimitMetrics(deps.registry);
  if (store.kind === 'memory') {
    const limiter = createMemoryRateLimiter({ metrics });
    return { limiter, close: () => limiter.close() };
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
  return {
    limiter,
    async close() {
      await limiter.close();
      connection.disconnect();
    },
  };
}
