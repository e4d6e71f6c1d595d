// Rate limits kept in this process: the store for `store.kind: memory` (one replica) and the per-replica
// fallback while Redis fails. Same algorithm and numbers as the Redis script (src/ratelimit/gcra.ts
// mirrors src/store/redis/scripts/includes/gcra.lua). Holds one entry per tenant limit ever charged, a set bounded by the
// configuration.
import { decide, decideWithoutStore } from '../../ratelimit/decision.ts';
import { evaluateLimits, type GcraState } from '../../ratelimit/gcra.ts';
import type { RateLimitMetrics } from '../../ratelimit/metrics.ts';
import type { LimitRequest, RateDecision, RateLimiter } from '../../ratelimit/types.ts';
import { monotonicEpochMicros } from '../clock.ts';

export interface MemoryRateLimiterOptions {
  /** µs since the epoch; defaults to a monotonic clock anchored at process start. */
  nowMicros?: () => number;
  metrics?: RateLimitMetrics;
}

export function createMemoryRateLimiter(options: MemoryRateLimiterOptions = {}): RateLimiter {
  const nowMicros = options.nowMicros ?? monotonicEpochMicros;
  const states = new Map<string, GcraState>();

  function decideNow(tenantId: string, limits: readonly LimitRequest[]): RateDecision {
    const early = decideWithoutStore(limits);
    if (early !== undefined) return early;
    const keys = limits.map((request) => `${tenantId}\u0000${request.id}`);
    const now = nowMicros();
    const evaluation = evaluateLimits(
      now,
      keys.map((key) => states.get(key)),
      limits,
    );
    if (evaluation.admitted) {
      for (const [index, key] of keys.entries()) {
        const state = evaluation.states[index];
        if (state === undefined) states.delete(key);
        else states.set(key, state);
      }
    }
    return decide(limits, now, evaluation.admitted, evaluation.verdicts, true);
  }

  return {
    check(tenantId, limits, checkOptions) {
      const decision = decideNow(tenantId, limits);
      if (checkOptions?.peek !== true) options.metrics?.recordDecision(tenantId, decision, limits);
      return Promise.resolve(decision);
    },
    degraded: false,
    close() {
      return Promise.resolve();
    },
  };
}
