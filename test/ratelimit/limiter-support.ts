// Builds rate limiters the way the gateway will: a real connection through createRedisConnection, its own
// metrics registry, and a teardown that closes all of it.
import { Registry } from 'prom-client';
import { createRateLimitMetrics, rateLimitMetricsScope } from '../../src/ratelimit/metrics.ts';
import type { RateLimiter } from '../../src/ratelimit/types.ts';
import { createStoreMetrics, STORE_OPERATIONS } from '../../src/store/metrics.ts';
import { createConnectionBreaker } from '../../src/store/redis/circuit-breaker.ts';
import {
  createRedisConnection,
  waitUntilConnected,
  type RedisConnectionOptions,
} from '../../src/store/redis/connection.ts';
import { createRedisRateLimiter, type RedisRateLimiterOptions } from '../../src/store/redis/rate-limiter.ts';
import { createStoreCalls, type StoreCallsOptions } from '../../src/store/redis/store-calls.ts';

/** The timeout the failure tests measure against. */
export const TEST_COMMAND_TIMEOUT_MS = 100;
// Tests about exact decisions must not fall back because a loaded CI machine answered slowly.
const EXACT_DECISIONS_COMMAND_TIMEOUT_MS = 2_000;
const CONNECT_WAIT_MS = 5_000;

export interface TestLimiter {
  limiter: RateLimiter;
  registry: Registry;
  close(): Promise<void>;
}

export type TestLimiterOptions = Partial<
  Omit<RedisRateLimiterOptions, 'metrics'> &
    Pick<StoreCallsOptions, 'commandTimeoutMs' | 'failMode' | 'logger'> & { probeIntervalMs: number }
>;

const silent = { info: () => undefined, warn: () => undefined };

export async function startTestLimiter(
  target: Pick<RedisConnectionOptions, 'url' | 'nodes'>,
  {
    probeIntervalMs,
    failMode = 'open',
    logger = silent,
    commandTimeoutMs = EXACT_DECISIONS_COMMAND_TIMEOUT_MS,
    ...options
  }: TestLimiterOptions = {},
): Promise<TestLimiter> {
  const connection = createRedisConnection({ ...target, keyPrefix: 'gengate:', commandTimeoutMs });
  await waitUntilConnected(connection, CONNECT_WAIT_MS);
  const registry = new Registry();
  const metrics = createRateLimitMetrics(registry, rateLimitMetricsScope('redis', failMode));
  const storeMetrics = createStoreMetrics(registry, STORE_OPERATIONS);
  const breaker = createConnectionBreaker(connection, {
    commandTimeoutMs,
    observeStore: storeMetrics.observeStore,
    ...(probeIntervalMs === undefined ? {} : { probeIntervalMs }),
  });
  storeMetrics.observeBreaker(breaker);
  const calls = createStoreCalls(connection, {
    breaker,
    commandTimeoutMs,
    failMode,
    logger,
    observeStore: storeMetrics.observeStore,
  });
  const limiter = createRedisRateLimiter(calls, { ...options, metrics });
  return {
    limiter,
    registry,
    async close() {
      breaker.stop();
      await limiter.close();
      connection.disconnect();
    },
  };
}

/** A clock the test moves by hand, in µs since the epoch, for the script's test-only "now". */
export function manualClock(startMicros: number) {
  let now = startMicros;
  return {
    now: () => now,
    advance(micros: number) {
      now += micros;
    },
  };
}
