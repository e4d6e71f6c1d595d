// Admission on a single Redis in one round trip: one script (admit-n.lua) checks the request id, charges
// the limits and claims the id only when the charge is admitted; the requests of one event-loop turn
// share one call of it. Anything it cannot decide goes the sequential way: a store that is failing (the
// shared breaker sends both steps to their fallbacks), a cost beyond its limit (refused without the store),
// a request with neither limits nor a reservation, or an id the store does not know but this replica may
// have claimed while the store was down.
import {
  createSequentialAdmission,
  type Admission,
  type AdmissionResult,
} from '../../admission/admission.ts';
import { claimOutcomeOf, type OwnershipStore } from '../../ownership/store.ts';
import { refusalWithoutStore } from '../../ratelimit/decision.ts';
import type { RateLimitMetrics } from '../../ratelimit/metrics.ts';
import type { LimitRequest, RateLimiter } from '../../ratelimit/types.ts';
import type { JobBook } from '../../jobs/book.ts';
import { refusalOfReply } from './job-book.ts';
import { batchPerTurn } from './send-per-turn.ts';
import {
  NO_RECORD_REPLY,
  decodeRecord,
  pendingClaimRecord,
  refuseKeyWithoutRecord,
} from './ownership-record.ts';
import {
  admitScript,
  decisionFromReply,
  scriptClockArg,
  undoClaimScript,
  type AdmissionCall,
} from './scripts.ts';
import type { StoreCalls } from './store-calls.ts';

export interface RedisAdmissionOptions {
  ownership: OwnershipStore;
  ownershipTtlMs: number;
  limiter: RateLimiter;
  jobs: JobBook;
  /** How long a reserved job waits for its create's answer before the tracker asks the upstream. */
  answerWaitMs: number;
  metrics: RateLimitMetrics;
  /** Tests only, as for the limiter: "now" (µs) for charge_limits instead of Redis TIME. */
  scriptClockForTests?: () => number;
}

const NOT_SENT = Symbol('not sent');
const SENT_UNANSWERED = Symbol('sent, not answered');

export function createRedisAdmission(calls: StoreCalls, options: RedisAdmissionOptions): Admission {
  const { breaker, clock } = calls;
  const sequential = createSequentialAdmission(options.ownership, options.limiter, options.jobs);
  const sendAdmissions = async (admissions: readonly AdmissionCall[]): Promise<unknown[]> => {
    const reply = await calls.run(admitScript, {
      clock: scriptClockArg(options.scriptClockForTests),
      claimTtlMs: options.ownershipTtlMs,
      deadline: calls.deadlineArg(),
      calls: admissions,
      answerWaitMs: options.answerWaitMs,
    });
    if (!Array.isArray(reply) || reply.length !== admissions.length + 1 || typeof reply[0] !== 'number') {
      throw new Error('unexpected admission script reply');
    }
    clock.observe(reply[0]);
    return reply.slice(1) as unknown[];
  };
  // The requests admitted in one turn share one call, the last of the turn's commands: after the answers
  // recorded in it, so a repeat sees its original's (send-per-turn.ts).
  if (calls.turn === undefined) throw new Error('admission in one call needs a single Redis connection');
  const admitInStore = batchPerTurn(sendAdmissions, calls.turn.atTurnEnd).add;

  return {
    async admit(tenantId, limits, requestId, reservation) {
      if (
        requestId === undefined ||
        (limits.length === 0 && reservation === undefined) ||
        breaker.open ||
        // A cost beyond its limit is refused without the store. No limit at all is no reason to leave the
        // script: it still claims the id and takes the reservation in the turn's one call.
        refusalWithoutStore(limits) !== undefined
      ) {
        return sequential.admit(tenantId, limits, requestId, reservation);
      }
      const call: AdmissionCall = {
        requestId: requestId.requestId,
        intent: requestId.intent,
        tenantId,
        claimRecord: requestId.intent === 'claim' ? pendingClaimRecord(tenantId) : '',
        limits,
        reservation: requestId.intent === 'claim' ? reservation : undefined,
      };
      const reply = await calls.attempt(
        'admission',
        async () => resultOf(await admitInStore(call), tenantId, limits),
        (sent): typeof NOT_SENT | typeof SENT_UNANSWERED => {
          // The store may have claimed and charged, or may still: undone once it answers, which the
          // tripped breaker waits for. A read claims nothing, so nothing would tell whether its charge was
          // made in time (made late, the deadline voids it): it stays, one unit at most per read in flight
          // at the failure. A reservation it took is found by the tracker, which asks the upstream.
          if (sent && call.intent === 'claim') {
            calls.undos.add(() =>
              calls.run(undoClaimScript, {
                requestId: call.requestId,
                tenantId,
                record: call.claimRecord,
                limits,
              }),
            );
          }
          return sent ? SENT_UNANSWERED : NOT_SENT;
        },
      );
      // Not answered: the breaker is open now, so both steps use their fallbacks.
      if (reply === NOT_SENT || reply === SENT_UNANSWERED || reply === undefined) {
        const result = await sequential.admit(tenantId, limits, requestId, reservation);
        // The script sent may have taken the reservation (adopt-unreserved.ts must not take it twice).
        return result.kind === 'decided' && result.unreserved !== undefined && reply === SENT_UNANSWERED
          ? { ...result, unreserved: 'maybe_taken' }
          : result;
      }
      if (reply === KEY_WITHOUT_RECORD) {
        refuseKeyWithoutRecord(calls.logger, calls.connection, requestId.requestId);
        return requestId.intent === 'claim'
          ? { kind: 'request_id_taken', outcome: { kind: 'owned_by_another_tenant' } }
          : { kind: 'not_owned' };
      }
      if (reply.kind === 'decided' && reply.decision !== undefined) {
        options.metrics.recordDecision(tenantId, reply.decision, limits);
      }
      return reply;
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
      return {
        kind: 'decided',
        // No limit applies: the script still ran for the reservation.
        decision: limits.length === 0 ? undefined : decisionFromReply(detail, limits),
        unreserved: undefined,
      };
    case 'job':
      return { kind: 'job_refused', refusal: refusalOfReply(detail) };
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
