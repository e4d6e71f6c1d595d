// Turns the algorithm's per-limit verdicts (from Redis or from memory) into the decision the gateway acts
// on, with every value already rounded the way the headers need it.
import { MICROS_PER_SECOND } from '../config/limit-bounds.ts';
import { assertLimitsSupported, type LimitVerdict } from './gcra.ts';
import type { LimitRequest, LimitState, RateDecision } from './types.ts';

function secondsRoundedUp(micros: number): number {
  return Math.ceil(micros / MICROS_PER_SECOND);
}

export function decide(
  limits: readonly LimitRequest[],
  nowMicros: number,
  admitted: boolean,
  verdicts: readonly LimitVerdict[],
  exact: boolean,
): RateDecision {
  const states: LimitState[] = limits.map((request, index) => {
    const verdict = verdicts[index];
    if (verdict === undefined) throw new Error(`no verdict for limit ${request.id}`);
    return {
      id: request.id,
      limit: request.limit,
      windowSeconds: request.windowSeconds,
      cost: request.cost,
      remaining: verdict.remaining,
      resetEpochSeconds: secondsRoundedUp(verdict.fullAtMicros),
      secondsUntilFull: secondsRoundedUp(verdict.fullAtMicros - nowMicros),
    };
  });
  if (admitted) return { outcome: 'admitted', limits: states, binding: fewestLeft(states), exact };
  let longestWait = 0;
  let binding: LimitState | undefined;
  verdicts.forEach((verdict, index) => {
    if (verdict.waitMicros > longestWait) {
      longestWait = verdict.waitMicros;
      binding = states[index];
    }
  });
  // A refusal always has a positive wait, so rounding up gives at least 1 second.
  return {
    outcome: 'rate_limited',
    limits: states,
    binding,
    exact,
    retryAfterSeconds: secondsRoundedUp(longestWait),
  };
}

// Ties go to the limit that takes longer to refill: its reset is the one a client should plan around.
function fewestLeft(states: readonly LimitState[]): LimitState | undefined {
  let best: LimitState | undefined;
  for (const state of states) {
    if (
      best === undefined ||
      state.remaining < best.remaining ||
      (state.remaining === best.remaining && state.resetEpochSeconds > best.resetEpochSeconds)
    ) {
      best = state;
    }
  }
  return best;
}

function costExceedsLimitDecision(exceeded: LimitRequest): RateDecision {
  return { outcome: 'cost_exceeds_limit', limits: [], binding: undefined, exceeded, exact: false };
}

export function storeUnavailableDecision(retryAfterSeconds: number): RateDecision {
  return { outcome: 'store_unavailable', limits: [], binding: undefined, exact: false, retryAfterSeconds };
}

/** The refusal of a request that can never fit (a cost beyond one of its limits), decided without any state. */
export function refusalWithoutStore(limits: readonly LimitRequest[]): RateDecision | undefined {
  assertLimitsSupported(limits);
  const exceeded = limits.find((request) => request.cost > request.limit);
  return exceeded === undefined ? undefined : costExceedsLimitDecision(exceeded);
}

/** What both limiters answer before any state is read: nothing to check, or a request that can never fit. */
export function decideWithoutStore(limits: readonly LimitRequest[]): RateDecision | undefined {
  if (limits.length === 0) return { outcome: 'admitted', limits: [], binding: undefined, exact: true };
  return refusalWithoutStore(limits);
}
