// charge_limits of gcra.lua as the scripts that charge limits call it: the Lua that defines it, the keys
// and arguments it takes for a tenant's limits, and the decision its reply stands for. The rate limiter,
// the admission script and the undo of a claim all charge or refund through it.
import { readFileSync } from 'node:fs';
import { decide } from '../../ratelimit/decision.ts';
import { STATE_TTL_MARGIN_MS, type LimitVerdict } from '../../ratelimit/gcra.ts';
import type { LimitRequest, RateDecision } from '../../ratelimit/types.ts';
import { rateLimitKey } from './keys.ts';

/** Defines `charge_limits(keys, argv)`, for scripts that charge limits (see gcra.lua). */
export const CHARGE_LIMITS_LUA = readFileSync(new URL('gcra.lua', import.meta.url), 'utf8');
const REPLY_HEADER_LENGTH = 2;
const REPLY_VALUES_PER_LIMIT = 3;

function integerAt(reply: readonly unknown[], index: number): number {
  const value = reply[index];
  if (typeof value !== 'number') throw new Error(`unexpected rate-limit script reply at ${index}`);
  return value;
}

/** The decision in a reply of charge_limits for `limits`, asked in that order. */
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
