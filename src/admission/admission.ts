// One decision per request before it goes upstream (docs/ownership.md, docs/rate-limits.md): its request id
// (claimed by a create, owned by whoever reads or cancels it) and its charge against the tenant's limits,
// both or neither. A refused charge leaves the id unclaimed; an id that is not the caller's charges nothing.
import type { OwnershipStore, TakenOutcome } from '../ownership/store.ts';
import type { LimitRequest, RateDecision, RateLimiter } from '../ratelimit/types.ts';

export interface RequestIdCheck {
  requestId: string;
  /** `claim`: a create takes the id; `own`: the caller must already own it. */
  intent: 'claim' | 'own';
}

export type AdmissionResult =
  /** A create's id is held (by another tenant, or by this one: pending or to replay). */
  | { kind: 'request_id_taken'; outcome: TakenOutcome }
  /** The caller does not own the id it reads or cancels (or nobody does). */
  | { kind: 'not_owned' }
  /** The id passed; `decision` is the charge (undefined when no limit applies to the request). */
  | { kind: 'decided'; decision: RateDecision | undefined };

export interface Admission {
  admit(
    tenantId: string,
    limits: readonly LimitRequest[],
    requestId: RequestIdCheck | undefined,
  ): Promise<AdmissionResult>;
}

/**
 * The id, then the charge, one store call each: for the memory store, for Redis Cluster (an id's key and
 * a tenant's limit keys live in different slots) and for whatever the single-call path cannot decide.
 */
export function createSequentialAdmission(ownership: OwnershipStore, limiter: RateLimiter): Admission {
  return {
    async admit(tenantId, limits, requestId) {
      if (requestId?.intent === 'claim') {
        const outcome = await ownership.claim(requestId.requestId, tenantId);
        if (outcome.kind !== 'claimed') return { kind: 'request_id_taken', outcome };
      } else if (requestId?.intent === 'own' && !(await ownership.owns(requestId.requestId, tenantId))) {
        return { kind: 'not_owned' };
      }
      const decision = limits.length === 0 ? undefined : await limiter.check(tenantId, limits);
      if (requestId?.intent === 'claim' && decision !== undefined && decision.outcome !== 'admitted') {
        await ownership.release(requestId.requestId, tenantId);
      }
      return { kind: 'decided', decision };
    },
  };
}
