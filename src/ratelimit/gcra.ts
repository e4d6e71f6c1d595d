// GCRA (generic cell rate algorithm) over several limits at once, charged all-or-nothing. This is the
// TypeScript twin of src/store/redis/scripts/includes/gcra.lua, which is the reference: same state, same operations in the same order, so
// both give identical numbers (test/ratelimit/property.test.ts compares them).
//
// A limit of L units per W µs emits one unit every W/L µs. Its state is the theoretical arrival time
// (TAT): the instant the limit is full again. To keep every value an exact integer, the "debt"
// TAT - now is handled in units of 1/L µs ("scaled"): a unit of cost adds exactly W scaled, and the
// capacity is L × W scaled.
import { MAX_LIMIT_TIMES_WINDOW_SECONDS, MICROS_PER_SECOND } from '../config/limit-bounds.ts';
import type { LimitRequest } from './types.ts';

/** How long a state outlives the moment its limit is full again (a fresh state needs no key at all). */
export const STATE_TTL_MARGIN_MS = 1_000;

/** Stored state: whole µs of the TAT plus the remaining fraction in 1/limit µs (0..limit-1). */
export interface GcraState {
  tatMicros: number;
  fraction: number;
}

export interface LimitVerdict {
  /** Whole units left (after the charge when admitted). */
  remaining: number;
  /** When the limit is full again, µs, rounded up. */
  fullAtMicros: number;
  /** 0 when this limit has room for the cost; otherwise the µs (rounded up) until it has. */
  waitMicros: number;
}

export interface Evaluation {
  admitted: boolean;
  verdicts: LimitVerdict[];
  /** New state per limit (undefined: the limit is full, nothing to keep); only meaningful when admitted. */
  states: (GcraState | undefined)[];
}

/** Programming or configuration errors, refused before anything is charged. */
export function assertLimitsSupported(limits: readonly LimitRequest[]): void {
  for (const { id, limit, windowSeconds, cost } of limits) {
    if (!Number.isSafeInteger(limit) || limit < 1)
      throw new RangeError(`limit ${id}: limit must be a positive integer`);
    if (!Number.isSafeInteger(windowSeconds) || windowSeconds < 1) {
      throw new RangeError(`limit ${id}: windowSeconds must be a positive integer`);
    }
    if (limit * windowSeconds > MAX_LIMIT_TIMES_WINDOW_SECONDS) {
      throw new RangeError(
        `limit ${id}: limit × windowSeconds must be at most ${MAX_LIMIT_TIMES_WINDOW_SECONDS}`,
      );
    }
    if (!Number.isSafeInteger(cost) || cost < 0)
      throw new RangeError(`limit ${id}: cost must be a non-negative integer`);
  }
}

/** The scaled debt a state represents at `nowMicros`; a state further ahead than one window counts as full. */
function debtOf(
  state: GcraState | undefined,
  nowMicros: number,
  limit: number,
  windowMicros: number,
): number {
  if (state === undefined || state.tatMicros < nowMicros) return 0;
  const capacity = limit * windowMicros;
  if (state.tatMicros - nowMicros > windowMicros) return capacity;
  return Math.min((state.tatMicros - nowMicros) * limit + Math.min(state.fraction, limit - 1), capacity);
}

function verdictOf(
  debt: number,
  cost: number,
  nowMicros: number,
  limit: number,
  windowMicros: number,
): LimitVerdict {
  const capacity = limit * windowMicros;
  const needed = debt + cost * windowMicros;
  return {
    remaining: Math.floor((capacity - debt) / windowMicros),
    fullAtMicros: nowMicros + Math.ceil(debt / limit),
    waitMicros: needed > capacity ? Math.ceil((needed - capacity) / limit) : 0,
  };
}

function stateOf(debt: number, nowMicros: number, limit: number): GcraState | undefined {
  if (debt === 0) return undefined;
  const wholeMicros = Math.floor(debt / limit);
  return { tatMicros: nowMicros + wholeMicros, fraction: debt - wholeMicros * limit };
}

export function evaluateLimits(
  nowMicros: number,
  stored: readonly (GcraState | undefined)[],
  limits: readonly LimitRequest[],
): Evaluation {
  const prepared = limits.map((request, index) => {
    const windowMicros = request.windowSeconds * MICROS_PER_SECOND;
    return { request, windowMicros, debt: debtOf(stored[index], nowMicros, request.limit, windowMicros) };
  });
  const admitted = prepared.every(
    ({ request, windowMicros, debt }) => debt + request.cost * windowMicros <= request.limit * windowMicros,
  );
  const outcomes = prepared.map(({ request, windowMicros, debt }) => {
    const after = admitted ? debt + request.cost * windowMicros : debt;
    // When admitted the verdict describes the state after the charge, which has no wait any more.
    const verdict = verdictOf(after, admitted ? 0 : request.cost, nowMicros, request.limit, windowMicros);
    return { verdict, state: stateOf(after, nowMicros, request.limit) };
  });
  return {
    admitted,
    verdicts: outcomes.map(({ verdict }) => verdict),
    states: outcomes.map(({ state }) => state),
  };
}
