// Admission on a single Redis in one round trip: one script checks the request id, charges the limits
// (charge_limits of gcra.lua) and claims the id only when the charge is admitted; the requests of one
// event-loop turn share one call of it. Anything it cannot decide goes the sequential way: a store that
// is failing (the shared breaker sends both steps to their fallbacks), a charge decided without the
// store, or an id the store does not know but this replica may have claimed while the store was down.
import {
  createSequentialAdmission,
  type Admission,
  type AdmissionResult,
  type RequestIdCheck,
} from '../../admission/admission.ts';
import { claimOutcomeOf, type OwnershipStore } from '../../ownership/store.ts';
import { decideWithoutStore } from '../../ratelimit/decision.ts';
import type { RateLimitMetrics } from '../../ratelimit/metrics.ts';
import type { LimitRequest, RateLimiter } from '../../ratelimit/types.ts';
import type { ObserveStore } from '../metrics.ts';
import { batchPerTurn } from './batch-per-turn.ts';
import { CHARGE_LIMITS_LUA, chargeClockArgs, decisionFromReply, pushChargeInput } from './charge-limits.ts';
import type { StoreBreaker } from './circuit-breaker.ts';
import { turnScheduleOf } from './coalesce-writes.ts';
import { commandDeadline, defineScript, type RedisConnection, type StoreLogger } from './connection.ts';
import { ownershipKey } from './keys.ts';
import {
  NO_RECORD_REPLY,
  decodeRecord,
  pendingClaimRecord,
  refuseKeyWithoutRecord,
} from './ownership-record.ts';
import type { UndoClaim } from './ownership-store.ts';
import { StoreDeadlinePassedError, isExpiredReply, type StoreClock } from './store-clock.ts';
import type { UndoOnRecovery } from './undo-on-recovery.ts';

// One admission: its id's record (`<tenant>` or `<tenant> ~<token>` pending, `<tenant> <response>`
// completed; see ownership-record.ts), its limits' keys and charge_limits' arguments, as charge_limits
// takes them. Reply: {'taken', record} | {'not_owned'} | {'unknown'} | {'charged', charge_limits' reply} |
// {'no_record'} (the id's key holds something else than a record: refuseKeyWithoutRecord).
//
// The script admits a turn's requests in order (batch-per-turn.ts), all at one moment (one
// TIME). ARGV[1] is their number, ARGV[2] and ARGV[3] charge_limits' clock and TTL margin, ARGV[4] the
// claim's TTL (ms), ARGV[5] the deadline (store-clock.ts); each request then takes from KEYS its
// record's key and its limits' keys, and from ARGV its limit count, `claim` or `own`, its tenant, the
// pending record its claim writes and 3 arguments per limit (charge_limits' own). Reply: this server's µs
// then one reply per request, or {'expired', µs} when the gateway had already given up on the call.
const ADMISSION_LUA = `${CHARGE_LIMITS_LUA}
local function admit(record_key, limit_keys, intent, tenant, claim_record, ttl, charge_args, now)
  -- pcall: a key that is not a string refuses this admission alone, not the others of its call (Redis
  -- would keep what they had already written), and charges nothing.
  local record = redis.pcall('GET', record_key)
  if type(record) == 'table' then return {'${NO_RECORD_REPLY}'} end
  if intent == 'claim' then
    if record then return {'taken', record} end
  elseif not record then
    return {'unknown'}
  elseif string.match(record, '^[^ ]*') ~= tenant then
    return {'not_owned'}
  end
  local charged = charge_limits(limit_keys, charge_args, now)
  if intent == 'claim' and charged[2] == 1 then
    redis.call('SET', record_key, claim_record, 'PX', ttl)
  end
  return {'charged', charged}
end

local server_time = server_now()
if past_deadline(ARGV[5], server_time) then return {'expired', server_time} end
local now = ARGV[2] == '' and server_time or tonumber(ARGV[2])
local replies = {server_time}
local key, arg = 1, 6
for n = 1, tonumber(ARGV[1]) do
  local limit_count = tonumber(ARGV[arg])
  local limit_keys, charge_args = {}, {ARGV[2], ARGV[3]}
  for i = 1, limit_count do limit_keys[i] = KEYS[key + i] end
  for i = 1, 3 * limit_count do charge_args[2 + i] = ARGV[arg + 3 + i] end
  replies[n + 1] = admit(KEYS[key], limit_keys, ARGV[arg + 1], ARGV[arg + 2], ARGV[arg + 3], ARGV[4],
    charge_args, now)
  key = key + 1 + limit_count
  arg = arg + 4 + 3 * limit_count
end
return replies`;

/** One request's keys and arguments, in the script's layout. */
interface AdmissionCall {
  keys: string[];
  args: (string | number)[];
}

export interface RedisAdmissionOptions {
  connection: RedisConnection;
  breaker: StoreBreaker;
  commandTimeoutMs: number;
  ownership: OwnershipStore;
  ownershipTtlMs: number;
  limiter: RateLimiter;
  metrics: RateLimitMetrics;
  observeStore: ObserveStore;
  logger: StoreLogger;
  /** The store's clock as replies show it (each call carries a deadline in it). */
  clock: StoreClock;
  /** Where admissions given up on wait to be undone once the store answers. */
  undos: UndoOnRecovery;
  undoClaim: UndoClaim;
  /** Tests only, as for the limiter: "now" (µs) for charge_limits instead of Redis TIME. */
  scriptClockForTests?: () => number;
}

export function createRedisAdmission(options: RedisAdmissionOptions): Admission {
  const { breaker, metrics, observeStore, clock } = options;
  const bounded = commandDeadline(options.connection, options.commandTimeoutMs);
  const sequential = createSequentialAdmission(options.ownership, options.limiter);
  const runScript = defineScript(options.connection, 'gengateAdmit', ADMISSION_LUA);
  const sendAdmissions = async (calls: readonly AdmissionCall[]): Promise<unknown[]> => {
    const keys: string[] = [];
    const args: (string | number)[] = [
      calls.length,
      ...chargeClockArgs(options.scriptClockForTests),
      options.ownershipTtlMs,
      clock.deadlineArg(options.commandTimeoutMs),
    ];
    for (const call of calls) {
      keys.push(...call.keys);
      args.push(...call.args);
    }
    const reply = await runScript(keys.length, keys, args);
    if (isExpiredReply(reply, clock)) throw new StoreDeadlinePassedError();
    if (!Array.isArray(reply) || reply.length !== calls.length + 1 || typeof reply[0] !== 'number') {
      throw new Error('unexpected admission script reply');
    }
    clock.observe(reply[0]);
    return reply.slice(1) as unknown[];
  };
  // The requests admitted in one turn share one call, the last of the turn's commands: after the answers
  // recorded in it, so a repeat sees its original's (coalesce-writes.ts).
  const turn = turnScheduleOf(options.connection);
  if (turn === undefined) throw new Error('admission in one call needs a single Redis connection');
  const admitInStore = batchPerTurn(sendAdmissions, turn.atTurnEnd).add;

  async function runInStore(
    tenantId: string,
    limits: readonly LimitRequest[],
    requestId: RequestIdCheck,
  ): Promise<unknown> {
    const claimRecord = requestId.intent === 'claim' ? pendingClaimRecord(tenantId) : '';
    const call: AdmissionCall = {
      keys: [ownershipKey(requestId.requestId)],
      args: [limits.length, requestId.intent, tenantId, claimRecord],
    };
    pushChargeInput(tenantId, limits, call.keys, call.args);
    const started = performance.now();
    try {
      const reply = await bounded(admitInStore(call));
      observeStore('admission', (performance.now() - started) / 1000, false);
      return reply;
    } catch (error) {
      observeStore('admission', (performance.now() - started) / 1000, true);
      // The store may have claimed and charged, or may still: undone once it answers, which the tripped
      // breaker waits for. A read claims nothing, so nothing would tell whether its charge was made in time
      // (made late, the deadline voids it): it stays, one unit at most per read in flight at the failure.
      breaker.trip();
      if (requestId.intent === 'claim') {
        options.undos.add(() => options.undoClaim(requestId.requestId, tenantId, claimRecord, limits));
      }
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
      let result: ReturnType<typeof resultOf>;
      try {
        result = resultOf(await runInStore(tenantId, limits, requestId), tenantId, limits);
      } catch {
        // The limiter and ownership log the trip (they share the breaker); both now use their fallbacks.
        breaker.trip();
        return sequential.admit(tenantId, limits, requestId);
      }
      if (result === undefined) return sequential.admit(tenantId, limits, requestId);
      if (result === KEY_WITHOUT_RECORD) {
        refuseKeyWithoutRecord(options.logger, options.connection, requestId.requestId);
        return requestId.intent === 'claim'
          ? { kind: 'request_id_taken', outcome: { kind: 'owned_by_another_tenant' } }
          : { kind: 'not_owned' };
      }
      if (result.kind === 'decided' && result.decision !== undefined) {
        metrics.recordDecision(tenantId, result.decision, limits);
      }
      return result;
    },
  };
}

const KEY_WITHOUT_RECORD = Symbol('key without record');

/**
 * The script's answer; undefined for `unknown` (the sequential way decides those), KEY_WITHOUT_RECORD
 * when the id's key holds no record.
 */
function resultOf(
  reply: unknown,
  tenantId: string,
  limits: readonly LimitRequest[],
): AdmissionResult | typeof KEY_WITHOUT_RECORD | undefined {
  if (!Array.isArray(reply)) throw new Error('unexpected admission script reply');
  const [kind, detail] = reply as [unknown, unknown];
  switch (kind) {
    case 'charged':
      return { kind: 'decided', decision: decisionFromReply(detail, limits) };
    case 'not_owned':
      return { kind: 'not_owned' };
    case 'unknown':
      return undefined;
    case NO_RECORD_REPLY:
      return KEY_WITHOUT_RECORD;
    case 'taken':
      if (typeof detail !== 'string') throw new Error('unexpected admission script reply');
      return { kind: 'request_id_taken', outcome: claimOutcomeOf(decodeRecord(detail), tenantId) };
    default:
      throw new Error('unexpected admission script reply');
  }
}
