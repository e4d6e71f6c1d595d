// store.kind redis: every part of the store on one shared Redis connection (single or Cluster) with one
// circuit breaker, one clock and one queue of undos, which its users share.
import { Cluster } from 'ioredis';
import { createSequentialAdmission } from '../../admission/admission.ts';
import type { GatewayConfig } from '../../config/schema.ts';
import type { RateLimitMetrics } from '../../ratelimit/metrics.ts';
import type { OnReportedCostCounted } from '../../usage/meter.ts';
import type { StoreBackend, StoreJobOptions } from '../gateway-store.ts';
import { createRedisJobBook } from './job-book.ts';
import type { StoreMetrics } from '../metrics.ts';
import { createRedisAdmission } from './admission.ts';
import { createConnectionBreaker } from './circuit-breaker.ts';
import {
  createRedisConnection,
  redisSecurityOptions,
  waitUntilConnected,
  type RedisConnection,
  type StoreLogger,
} from './connection.ts';
import { createRedisOwnershipStore } from './ownership-store.ts';
import { createRedisRateLimiter } from './rate-limiter.ts';
import { createStoreCalls } from './store-calls.ts';
import { learnClockOnConnect } from './store-clock.ts';
import { createRedisUsageMeter } from './usage-meter.ts';

// Start-up only: long enough for a healthy Redis, short enough that a dead one does not hold the
// process (fail-open replicas serve from the fallback; fail-closed ones stay not ready).
const STARTUP_CONNECT_WAIT_MS = 2_000;

/**
 * Budgets are kept in Redis: without AOF a Redis restart forgets what was spent (docs/budgets.md). Start-up
 * only, and only where INFO is readable (a managed Redis may refuse it): then nothing is said.
 */
function warnWithoutPersistence(connection: RedisConnection, logger: StoreLogger): void {
  if (connection instanceof Cluster) return;
  connection.info('persistence').then(
    (info) => {
      if (/^aof_enabled:0\r?$/m.test(info)) {
        logger.warn(
          {},
          'tenants have budgets but Redis has no AOF persistence: a Redis restart forgets spending',
        );
      }
    },
    () => undefined,
  );
}

export async function openRedisStore(
  store: GatewayConfig['store'],
  deps: {
    logger: StoreLogger;
    metrics: RateLimitMetrics;
    storeMetrics: StoreMetrics;
    onReportedCostCounted: OnReportedCostCounted;
    jobs: StoreJobOptions;
  },
): Promise<StoreBackend> {
  const { metrics, storeMetrics } = deps;
  const connection = createRedisConnection(
    {
      url: store.redis.url,
      ...(store.redis.nodes === undefined ? {} : { nodes: store.redis.nodes }),
      keyPrefix: store.redis.keyPrefix,
      commandTimeoutMs: store.redis.commandTimeoutMs,
      security: await redisSecurityOptions(store.redis),
    },
    deps.logger,
  );
  await waitUntilConnected(connection, STARTUP_CONNECT_WAIT_MS).catch(() => {
    deps.logger.warn({}, 'store not reachable at start-up; serving per its failMode until it is');
  });
  if (deps.jobs.budgets) warnWithoutPersistence(connection, deps.logger);
  const { commandTimeoutMs } = store.redis;
  const ownershipTtlMs = store.ownershipTtlSeconds * 1000;
  const breaker = createConnectionBreaker(connection, {
    commandTimeoutMs,
    observeStore: storeMetrics.observeStore,
  });
  storeMetrics.observeBreaker(breaker);
  const calls = createStoreCalls(connection, {
    breaker,
    commandTimeoutMs,
    failMode: store.failMode,
    logger: deps.logger,
    observeStore: storeMetrics.observeStore,
  });
  learnClockOnConnect(connection, calls.clock);
  const limiter = createRedisRateLimiter(calls, { metrics, fallbackReplicas: store.replicas });
  const usage = createRedisUsageMeter(calls, { onReportedCostCounted: deps.onReportedCostCounted });
  const ownership = createRedisOwnershipStore(calls, { ttlMs: ownershipTtlMs });
  // The jobs' keys share one hash tag (keys.ts): their scripts run on a Cluster as well.
  const jobs = createRedisJobBook(calls, deps.jobs);
  // In a Cluster an id's key and a tenant's limit keys hash to different slots: no single script.
  const admission =
    connection instanceof Cluster
      ? createSequentialAdmission(ownership, limiter, jobs)
      : createRedisAdmission(calls, {
          ownership,
          ownershipTtlMs,
          limiter,
          metrics,
          jobs,
          answerWaitMs: deps.jobs.answerWaitMs,
        });
  return {
    limiter,
    usage,
    ownership,
    jobs,
    admission,
    async close() {
      breaker.stop();
      await Promise.all([limiter.close(), usage.close(), ownership.close(), jobs.drain()]);
      connection.disconnect();
    },
  };
}
