// Rate limits shared by every replica through Redis: one script call per request (gcra.lua), the store's
// clock only, and a bounded, cheap answer when the store fails (fail open to a per-replica fallback, or
// fail closed with store_unavailable) until a background probe sees it healthy again.
import { performance } from 'node:perf_hooks';
import { decideWithoutStore, storeUnavailableDecision } from '../../ratelimit/decision.ts';
import type { RateLimitMetrics } from '../../ratelimit/metrics.ts';
import type { LimitRequest, RateDecision, RateLimiter } from '../../ratelimit/types.ts';
import type { ObserveStore, StoreOperation } from '../metrics.ts';
import { createMemoryRateLimiter } from '../memory/rate-limiter.ts';
import { CHARGE_LIMITS_LUA, chargeClockArgs, decisionFromReply, pushChargeInput } from './charge-limits.ts';
import {
  STORE_UNAVAILABLE_RETRY_AFTER_SECONDS,
  type StoreBreaker,
  type StoreFailMode,
} from './circuit-breaker.ts';
import { commandDeadline, defineScript, type RedisConnection, type StoreLogger } from './connection.ts';
import { StoreDeadlinePassedError, isExpiredReply, type StoreClock } from './store-clock.ts';

export interface RedisRateLimiterOptions {
  connection: RedisConnection;
  /** The connection's breaker, shared with the other users of the connection. */
  breaker: StoreBreaker;
  commandTimeoutMs: number;
  failMode: StoreFailMode;
  metrics: RateLimitMetrics;
  observeStore: ObserveStore;
  logger?: StoreLogger;
  /**
   * How many replicas share the traffic while the store is down. Each replica's fallback admits
   * limit / fallbackReplicas, so an outage does not multiply a tenant's limit by the replica count.
   */
  fallbackReplicas?: number;
  /** The store's clock as replies show it, shared by the connection's users (deadlines). */
  clock: StoreClock;
  /** Tests only: the script takes "now" (µs) from here instead of Redis TIME. Never set in production. */
  scriptClockForTests?: () => number;
}

const SCRIPT_COMMAND = 'gengateRateLimit';
// ARGV as charge_limits takes them, then the deadline (store-clock.ts). Reply: charge_limits',
// or {'expired', this server's µs} when the gateway had already given up on the call.
const RATE_LIMIT_LUA = `${CHARGE_LIMITS_LUA}
local server_time = server_now()
if past_deadline(ARGV[#ARGV], server_time) then return {'expired', server_time} end
return charge_limits(KEYS, ARGV, ARGV[1] == '' and server_time or tonumber(ARGV[1]))`;

function fallbackShare(limits: readonly LimitRequest[], replicas: number): LimitRequest[] {
  return limits.map((request) => {
    const limit = Math.max(1, Math.ceil(request.limit / replicas));
    // A cost that fits the shared limit but not this replica's share takes the whole share instead.
    return { ...request, limit, cost: Math.min(request.cost, limit) };
  });
}

export function createRedisRateLimiter(options: RedisRateLimiterOptions): RateLimiter {
  const { connection, commandTimeoutMs, metrics, observeStore, logger, clock } = options;
  const { breaker } = options;
  const bounded = commandDeadline(connection, commandTimeoutMs);
  const runScript = defineScript(connection, SCRIPT_COMMAND, RATE_LIMIT_LUA);
  const fallback = createMemoryRateLimiter();
  const fallbackReplicas = options.fallbackReplicas ?? 1;
  const scriptClock = options.scriptClockForTests;

  async function timed<T>(operation: StoreOperation, run: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      const result = await bounded(run());
      observeStore(operation, (performance.now() - started) / 1000, false);
      return result;
    } catch (error) {
      observeStore(operation, (performance.now() - started) / 1000, true);
      throw error;
    }
  }

  breaker.onChange((open) => {
    if (open)
      logger?.warn({ failMode: options.failMode }, 'rate-limit store failing; bypassing it until it answers');
    else logger?.info({}, 'rate-limit store answering again; exact limits resumed');
  });

  async function checkInStore(tenantId: string, limits: readonly LimitRequest[]): Promise<RateDecision> {
    const keys: string[] = [];
    const args: (string | number)[] = chargeClockArgs(scriptClock);
    pushChargeInput(tenantId, limits, keys, args);
    args.push(clock.deadlineArg(commandTimeoutMs));
    const reply = await timed('rate_limit_check', () => runScript(keys.length, keys, args));
    if (isExpiredReply(reply, clock)) throw new StoreDeadlinePassedError();
    const decision = decisionFromReply(reply, limits);
    // charge_limits' reply opens with its "now": the store's, unless a test clock gave it.
    if (scriptClock === undefined) clock.observe((reply as number[])[0] as number);
    return decision;
  }

  async function decideWhileDegraded(
    tenantId: string,
    limits: readonly LimitRequest[],
  ): Promise<RateDecision> {
    if (options.failMode === 'closed') return storeUnavailableDecision(STORE_UNAVAILABLE_RETRY_AFTER_SECONDS);
    const decision = await fallback.check(tenantId, fallbackShare(limits, fallbackReplicas));
    return { ...decision, exact: false };
  }

  async function decideNow(tenantId: string, limits: readonly LimitRequest[]): Promise<RateDecision> {
    const early = decideWithoutStore(limits);
    if (early !== undefined) return early;
    if (breaker.open) return decideWhileDegraded(tenantId, limits);
    try {
      return await checkInStore(tenantId, limits);
    } catch (error) {
      // Requests in flight when the store failed all land here; only the first one reports it.
      if (breaker.trip()) {
        logger?.warn(
          { err: error instanceof Error ? error.message : String(error) },
          'rate-limit store call failed',
        );
      }
      return decideWhileDegraded(tenantId, limits);
    }
  }

  return {
    async check(tenantId, limits, checkOptions) {
      const decision = await decideNow(tenantId, limits);
      if (checkOptions?.peek !== true) metrics.recordDecision(tenantId, decision, limits);
      return decision;
    },
    get degraded() {
      return breaker.open;
    },
    close() {
      return Promise.resolve();
    },
  };
}
