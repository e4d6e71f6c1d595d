// Rate limits shared by every replica through Redis: one script call per request (gcra.lua), the store's
// clock only, and a bounded, cheap answer when the store fails (fail open to a per-replica fallback, or
// fail closed with store_unavailable) until a background probe sees it healthy again.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import {
  defineScript,
  tenantKey,
  commandDeadline,
  type RedisConnection,
  type StoreLogger,
} from '../store/redis.ts';
import {
  STORE_UNAVAILABLE_RETRY_AFTER_SECONDS,
  type StoreBreaker,
  type StoreFailMode,
} from '../store/circuit-breaker.ts';
import { decide, decideWithoutStore, storeUnavailableDecision } from './decision.ts';
import type { StoreOperation } from '../store/operations.ts';
import type { StoreClock } from '../store/store-clock.ts';
import { STATE_TTL_MARGIN_MS, type LimitVerdict } from './gcra.ts';
import { createMemoryRateLimiter } from './memory-limiter.ts';
import type { RateLimitMetrics } from './metrics.ts';
import type { LimitRequest, RateDecision, RateLimiter } from './types.ts';

export interface RedisRateLimiterOptions {
  connection: RedisConnection;
  /** The connection's breaker, shared with the other users of the connection. */
  breaker: StoreBreaker;
  commandTimeoutMs: number;
  failMode: StoreFailMode;
  metrics: RateLimitMetrics;
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
/** Defines `charge_limits(keys, argv)`, for scripts that charge limits (see gcra.lua). */
export const CHARGE_LIMITS_LUA = readFileSync(new URL('gcra.lua', import.meta.url), 'utf8');
// ARGV as charge_limits takes them, then the deadline (src/store/store-clock.ts). Reply: charge_limits',
// or {'expired', this server's µs} when the gateway had already given up on the call.
const RATE_LIMIT_LUA = `${CHARGE_LIMITS_LUA}
local server_time = server_now()
if past_deadline(ARGV[#ARGV], server_time) then return {'expired', server_time} end
return charge_limits(KEYS, ARGV, ARGV[1] == '' and server_time or tonumber(ARGV[1]))`;
const REPLY_HEADER_LENGTH = 2;
const REPLY_VALUES_PER_LIMIT = 3;

/** All of a tenant's keys share one hash tag, so the multi-key script never crosses Cluster slots. */
export function rateLimitKey(tenantId: string, limitId: string): string {
  return tenantKey(tenantId, `limit:${limitId}`);
}

function integerAt(reply: readonly unknown[], index: number): number {
  const value = reply[index];
  if (typeof value !== 'number') throw new Error(`unexpected rate-limit script reply at ${index}`);
  return value;
}

/** The decision in a reply of charge_limits for `limits`, asked in that order. */
/** Thrown for a reply saying the store ran the call after its deadline (see src/store/store-clock.ts). */
export class StoreDeadlinePassedError extends Error {
  constructor() {
    super('the store ran the call after its deadline; it changed nothing');
    this.name = 'StoreDeadlinePassedError';
  }
}

/** Whether `reply` is a script's {'expired', µs}; the store's µs go to `clock` either way. */
export function isExpiredReply(reply: unknown, clock: StoreClock): boolean {
  if (!Array.isArray(reply) || reply[0] !== 'expired') return false;
  if (typeof reply[1] === 'number') clock.observe(reply[1]);
  return true;
}

export function decisionFromReply(reply: unknown, limits: readonly LimitRequest[]): RateDecision {
  if (
    !Array.isArray(reply) ||
    reply.length !== REPLY_HEADER_LENGTH + REPLY_VALUES_PER_LIMIT * limits.length
  ) {
    throw new Error('unexpected rate-limit script reply');
  }
  const verdicts: LimitVerdict[] = [];
  for (let offset = REPLY_HEADER_LENGTH; offset < reply.length; offset += REPLY_VALUES_PER_LIMIT) {
    verdicts.push({
      remaining: integerAt(reply, offset),
      fullAtMicros: integerAt(reply, offset + 1),
      waitMicros: integerAt(reply, offset + 2),
    });
  }
  return decide(limits, integerAt(reply, 0), integerAt(reply, 1) === 1, verdicts, true);
}

const TTL_MARGIN_ARG = String(STATE_TTL_MARGIN_MS);

/** The two arguments that open charge_limits' ARGV: the clock ('' in production) and the TTL margin. */
export function chargeClockArgs(scriptClock: (() => number) | undefined): [clock: string, margin: string] {
  return [scriptClock === undefined ? '' : String(scriptClock()), TTL_MARGIN_ARG];
}

/** Appends charge_limits' keys for one tenant's limits to `keys`, and the limits' own arguments to `args`. */
export function pushChargeInput(
  tenantId: string,
  limits: readonly LimitRequest[],
  keys: string[],
  args: (string | number)[],
): void {
  for (const request of limits) {
    keys.push(rateLimitKey(tenantId, request.id));
    args.push(request.limit, request.windowSeconds, request.cost);
  }
}

function fallbackShare(limits: readonly LimitRequest[], replicas: number): LimitRequest[] {
  return limits.map((request) => {
    const limit = Math.max(1, Math.ceil(request.limit / replicas));
    // A cost that fits the shared limit but not this replica's share takes the whole share instead.
    return { ...request, limit, cost: Math.min(request.cost, limit) };
  });
}

export function createRedisRateLimiter(options: RedisRateLimiterOptions): RateLimiter {
  const { connection, commandTimeoutMs, metrics, logger, clock } = options;
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
      metrics.observeStore(operation, (performance.now() - started) / 1000, false);
      return result;
    } catch (error) {
      metrics.observeStore(operation, (performance.now() - started) / 1000, true);
      throw error;
    }
  }

  breaker.onChange((open) => {
    metrics.setDegraded(open);
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
