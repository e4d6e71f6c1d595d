// Admission on a single Redis in one round trip: one script checks the request id, charges the limits
// (charge_limits of src/ratelimit/gcra.lua) and claims the id only when the charge is admitted. Anything
// it cannot decide goes the sequential way: a store that is failing (the shared breaker sends both steps
// to their fallbacks), a charge decided without the store, or an id the store does not know but this
// replica may have claimed while the store was down.
import { decodeRecord, ownershipKey } from '../ownership/redis-store.ts';
import { claimOutcomeOf, type OwnershipStore } from '../ownership/store.ts';
import { decideWithoutStore } from '../ratelimit/decision.ts';
import type { RateLimitMetrics } from '../ratelimit/metrics.ts';
import { CHARGE_LIMITS_LUA, chargeLimitsInput, decisionFromReply } from '../ratelimit/redis-limiter.ts';
import type { LimitRequest, RateLimiter } from '../ratelimit/types.ts';
import type { StoreBreaker } from '../store/circuit-breaker.ts';
import { commandDeadline, defineScript, type RedisConnection } from '../store/redis.ts';
import {
  createSequentialAdmission,
  type Admission,
  type AdmissionResult,
  type RequestIdCheck,
} from './admission.ts';

// KEYS[1]  the id's record (`<tenant>` pending, `<tenant> <response>` completed; see ownership/redis-store)
// KEYS[2…] the limits' states, as charge_limits takes them
// ARGV[1]  `claim` or `own`; ARGV[2] the tenant; ARGV[3] the claim's TTL, ms; ARGV[4…] charge_limits' own
// Reply    {'taken', record} | {'not_owned'} | {'unknown'} | {'charged', charge_limits' reply}
const ADMISSION_LUA = `${CHARGE_LIMITS_LUA}
local record = redis.call('GET', KEYS[1])
if ARGV[1] == 'claim' then
  if record then return {'taken', record} end
elseif not record then
  return {'unknown'}
elseif string.match(record, '^[^ ]*') ~= ARGV[2] then
  return {'not_owned'}
end
local charged = charge_limits({unpack(KEYS, 2)}, {unpack(ARGV, 4)})
if ARGV[1] == 'claim' and charged[2] == 1 then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
return {'charged', charged}`;

export interface RedisAdmissionOptions {
  connection: RedisConnection;
  breaker: StoreBreaker;
  commandTimeoutMs: number;
  ownership: OwnershipStore;
  ownershipTtlMs: number;
  limiter: RateLimiter;
  metrics: RateLimitMetrics;
  /** Tests only, as for the limiter: "now" (µs) for charge_limits instead of Redis TIME. */
  scriptClockForTests?: () => number;
}

export function createRedisAdmission(options: RedisAdmissionOptions): Admission {
  const { breaker, metrics } = options;
  const bounded = commandDeadline(options.connection, options.commandTimeoutMs);
  const sequential = createSequentialAdmission(options.ownership, options.limiter);
  const runScript = defineScript(options.connection, 'gengateAdmit', ADMISSION_LUA);

  async function runInStore(
    tenantId: string,
    limits: readonly LimitRequest[],
    requestId: RequestIdCheck,
  ): Promise<unknown> {
    const charge = chargeLimitsInput(tenantId, limits, options.scriptClockForTests);
    const started = performance.now();
    try {
      const reply = await bounded(
        runScript(
          1 + charge.keys.length,
          ownershipKey(requestId.requestId),
          ...charge.keys,
          requestId.intent,
          tenantId,
          options.ownershipTtlMs,
          ...charge.args,
        ),
      );
      metrics.observeStore('admission', (performance.now() - started) / 1000, false);
      return reply;
    } catch (error) {
      metrics.observeStore('admission', (performance.now() - started) / 1000, true);
      throw error;
    }
  }

  return {
    async admit(tenantId, limits, requestId) {
      if (
        requestId === undefined ||
        limits.length === 0 ||
        breaker.open ||
        decideWithoutStore(limits) !== undefined
      ) {
        return sequential.admit(tenantId, limits, requestId);
      }
      let reply: unknown;
      try {
        reply = await runInStore(tenantId, limits, requestId);
      } catch {
        // The limiter and ownership log the trip (they share the breaker); both now use their fallbacks.
        breaker.trip();
        return sequential.admit(tenantId, limits, requestId);
      }
      const result = resultOf(reply, tenantId, limits);
      if (result === undefined) return sequential.admit(tenantId, limits, requestId);
      if (result.kind === 'decided' && result.decision !== undefined) {
        metrics.recordDecision(tenantId, result.decision, limits);
      }
      return result;
    },
  };
}

/** The script's answer, or undefined for `unknown` (the sequential way decides those). */
function resultOf(
  reply: unknown,
  tenantId: string,
  limits: readonly LimitRequest[],
): AdmissionResult | undefined {
  if (!Array.isArray(reply)) throw new Error('unexpected admission script reply');
  const [kind, detail] = reply as [unknown, unknown];
  switch (kind) {
    case 'charged':
      return { kind: 'decided', decision: decisionFromReply(detail, limits) };
    case 'not_owned':
      return { kind: 'not_owned' };
    case 'unknown':
      return undefined;
    case 'taken':
      if (typeof detail !== 'string') throw new Error('unexpected admission script reply');
      return { kind: 'request_id_taken', outcome: claimOutcomeOf(decodeRecord(detail), tenantId) };
    default:
      throw new Error('unexpected admission script reply');
  }
}
