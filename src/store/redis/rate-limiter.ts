// Rate limits shared by every replica through Redis: one script call per request (chargeLimits-n.lua),
// the store's clock only, and a bounded, cheap answer when the store fails (fail open to a per-replica
// fallback, or fail closed with store_unavailable) until a background probe sees it healthy again.
import { decideWithoutStore, storeUnavailableDecision } from '../../ratelimit/decision.ts';
import type { RateLimitMetrics } from '../../ratelimit/metrics.ts';
import type { LimitRequest, RateDecision, RateLimiter } from '../../ratelimit/types.ts';
import { createMemoryRateLimiter } from '../memory/rate-limiter.ts';
import { STORE_UNAVAILABLE_RETRY_AFTER_SECONDS } from './circuit-breaker.ts';
import { chargeLimitsScript, decisionFromReply, scriptClockArg } from './scripts.ts';
import type { StoreCalls } from './store-calls.ts';

export interface RedisRateLimiterOptions {
  metrics: RateLimitMetrics;
  /**
   * How many replicas share the traffic while the store is down. Each replica's fallback admits
   * limit / fallbackReplicas, so an outage does not multiply a tenant's limit by the replica count.
   */
  fallbackReplicas?: number;
  /** Tests only: the script takes "now" (µs) from here instead of Redis TIME. Never set in production. */
  scriptClockForTests?: () => number;
}

function fallbackShare(limits: readonly LimitRequest[], replicas: number): LimitRequest[] {
  return limits.map((request) => {
    const limit = Math.max(1, Math.ceil(request.limit / replicas));
    // A cost that fits the shared limit but not this replica's share takes the whole share instead.
    return { ...request, limit, cost: Math.min(request.cost, limit) };
  });
}

export function createRedisRateLimiter(calls: StoreCalls, options: RedisRateLimiterOptions): RateLimiter {
  const { clock } = calls;
  const fallback = createMemoryRateLimiter();
  const fallbackReplicas = options.fallbackReplicas ?? 1;
  const scriptClock = options.scriptClockForTests;

  async function checkInStore(tenantId: string, limits: readonly LimitRequest[]): Promise<RateDecision> {
    const reply = await calls.run(chargeLimitsScript, {
      clock: scriptClockArg(scriptClock),
      deadline: calls.deadlineArg(),
      tenantId,
      limits,
    });
    const decision = decisionFromReply(reply, limits);
    // charge_limits' reply opens with its "now": the store's, unless a test clock gave it.
    if (scriptClock === undefined) clock.observe((reply as number[])[0] as number);
    return decision;
  }

  async function decideWhileDegraded(
    tenantId: string,
    limits: readonly LimitRequest[],
  ): Promise<RateDecision> {
    if (calls.failMode === 'closed') return storeUnavailableDecision(STORE_UNAVAILABLE_RETRY_AFTER_SECONDS);
    const decision = await fallback.check(tenantId, fallbackShare(limits, fallbackReplicas));
    return { ...decision, exact: false };
  }

  async function decideNow(tenantId: string, limits: readonly LimitRequest[]): Promise<RateDecision> {
    const early = decideWithoutStore(limits);
    if (early !== undefined) return early;
    return calls.attempt(
      'rate_limit_check',
      () => checkInStore(tenantId, limits),
      () => decideWhileDegraded(tenantId, limits),
    );
  }

  return {
    async check(tenantId, limits, checkOptions) {
      const decision = await decideNow(tenantId, limits);
      if (checkOptions?.peek !== true) options.metrics.recordDecision(tenantId, decision, limits);
      return decision;
    },
    get degraded() {
      return calls.breaker.open;
    },
    close() {
      return Promise.resolve();
    },
  };
}
