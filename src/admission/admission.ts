// One decision per request before it goes upstream (docs/ownership.md, docs/rate-limits.md): its request id
// (claimed by a create, owned by whoever reads or cancels it) and its charge against the tenant's limits,
// both or neither. A refused charge leaves the id unclaimed; an id that is not the caller's charges nothing.
import type { JobBook, JobReservation, ReservationRefusal, Unreserved } from '../jobs/book.ts';
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
  /** A create's job does not fit its tenant's budget or a cap on jobs in flight; nothing was charged. */
  | { kind: 'job_refused'; refusal: ReservationRefusal }
  /**
   * The id passed; `decision` is the charge (undefined when no limit applies to the request). `unreserved`:
   * the create's reservation could not be taken (the store failed, failMode open), and whether the store
   * may have taken it nonetheless.
   */
  | { kind: 'decided'; decision: RateDecision | undefined; unreserved: Unreserved | undefined };

export interface Admission {
  admit(
    tenantId: string,
    limits: readonly LimitRequest[],
    requestId: RequestIdCheck | undefined,
    /** A create's job reservation (docs/budgets.md); taken only with an admitted claim. */
    reservation?: JobReservation,
  ): Promise<AdmissionResult>;
}

/**
 * The id, the job's reservation, then the charge, one store call each: for the memory store (one process:
 * nothing comes between them that matters) and for whatever the single-call path cannot decide.
 */
export function createSequentialAdmission(
  ownership: OwnershipStore,
  limiter: RateLimiter,
  jobs: JobBook,
): Admission {
  return {
    async admit(tenantId, limits, requestId, reservation) {
      let reserved: 'reserved' | Unreserved | undefined;
      if (requestId?.intent === 'claim') {
        const outcome = await ownership.claim(requestId.requestId, tenantId);
        if (outcome.kind !== 'claimed') return { kind: 'request_id_taken', outcome };
        if (reservation !== undefined) {
          const verdict = await jobs.reserve(tenantId, requestId.requestId, reservation);
          if (typeof verdict === 'object') {
            await ownership.release(requestId.requestId, tenantId);
            return { kind: 'job_refused', refusal: verdict };
          }
          reserved = verdict;
        }
      } else if (requestId?.intent === 'own' && !(await ownership.owns(requestId.requestId, tenantId))) {
        return { kind: 'not_owned' };
      }
      const decision = limits.length === 0 ? undefined : await limiter.check(tenantId, limits);
      if (requestId?.intent === 'claim' && decision !== undefined && decision.outcome !== 'admitted') {
        await ownership.release(requestId.requestId, tenantId);
        if (reserved === 'reserved' && reservation !== undefined) {
          const job = { requestId: requestId.requestId, tenantId, credential: reservation.credential };
          await jobs.settle(job, { outcome: 'refused' });
        }
      }
      return { kind: 'decided', decision, unreserved: reserved === 'reserved' ? undefined : reserved };
    },
  };
}
