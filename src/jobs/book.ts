// The store's side of jobs (docs/budgets.md): each create's reservation (its expected cost against the
// tenant's budgets, a slot under the tenant's and the credential's caps), the set of jobs to follow, and
// each job's settlement, exactly once. Kept in this process (src/store/memory/job-book.ts) or in Redis
// (src/store/redis/job-book.ts); amounts are micro-USD integers (./pricing.ts).
import type { JobEnd, JobOutcome, JobRoute } from './job-ends.ts';

export type BudgetScope = 'daily' | 'monthly';

/** What one create reserves at admission. */
export interface JobReservation {
  route: JobRoute;
  credential: string;
  costMicroUsd: number;
  /** The tenant's budgets, micro-USD per period; absent: no budget of that scope. */
  dailyMicroUsd: number | undefined;
  monthlyMicroUsd: number | undefined;
  /** The tenant's cap on jobs in flight, and the credential's (shared by every tenant on it). */
  tenantMaxInFlight: number | undefined;
  credentialMaxInFlight: number | undefined;
}

export type ReservationRefusal =
  | { kind: 'budget_exceeded'; scope: BudgetScope; remainingMicroUsd: number; resetsAtMs: number }
  | { kind: 'too_many_jobs_in_flight'; scope: 'tenant' | 'credential'; limit: number };

/**
 * A create admitted without its reservation because the store did not answer (failMode open):
 * `not_sent`, nothing reached the store; `maybe_taken`, the call was sent and the store may have run it.
 */
export type Unreserved = 'not_sent' | 'maybe_taken';

/** A create admitted without its reservation, once its answer is known: to follow when the store is back. */
export interface UnreservedJob extends JobIdentity {
  reservation: JobReservation;
  unreserved: Unreserved;
  /** When it was admitted (this replica's clock, epoch ms). */
  admittedAtMs: number;
  /** `accepted`: the upstream took the create (2xx); `unknown`: no answer (502, 504). */
  answer: 'accepted' | 'unknown';
  /** When the tracker first polls an accepted one, from its adoption. */
  firstPollMs: number;
}

/** A tracked job as the store keeps it. */
export interface TrackedJob extends JobIdentity {
  route: JobRoute;
  costMicroUsd: number;
  /** When it was admitted (the store's clock, epoch ms). */
  admittedAtMs: number;
  /** `reserved`: admitted, the upstream's answer not yet known; `submitted`: accepted upstream. */
  state: 'reserved' | 'submitted' | 'ended';
  /** The tracker's polls so far (its backoff). */
  polls: number;
  /** Set once settled: what listeners are told. */
  end: JobEnd | undefined;
}

/** Which job, and whose: the tenant and credential it was reserved for (a settlement checks them). */
export interface JobIdentity {
  requestId: string;
  tenantId: string;
  credential: string;
}

/** How a job's reservation is settled. `refused`: the upstream never accepted the create. */
export type Settlement =
  | { outcome: 'completed'; reportedMicroUsd: number; record: string }
  | { outcome: Exclude<JobOutcome, 'completed' | 'expired'>; record: string }
  | { outcome: 'expired' }
  | { outcome: 'refused' };

/** A settlement this call made. */
export interface SettledJob {
  end: JobEnd;
  /** What the settlement added to the tenant's spending (the reported cost, the estimate, or 0). */
  spentMicroUsd: number;
  admittedAtMs: number;
}

export interface BudgetPeriodUsage {
  limitMicroUsd: number;
  reservedMicroUsd: number;
  spentMicroUsd: number;
  resetsAtMs: number;
}

export interface JobsUsage {
  daily: BudgetPeriodUsage | undefined;
  monthly: BudgetPeriodUsage | undefined;
  jobsInFlight: number;
}

export interface JobBook {
  /**
   * Reserves in one step, or says what refused: for the memory store and the sequential path (the Redis
   * admission script reserves together with the limits instead). Unreserved: the store could not
   * answer and its failMode admits without a reservation.
   */
  reserve(
    tenantId: string,
    requestId: string,
    reservation: JobReservation,
  ): Promise<ReservationRefusal | 'reserved' | Unreserved>;
  /**
   * Follows a create admitted without its reservation once the store answers (at once if it does now):
   * recorded as reserved at its admission, then tracked and settled like any other job. Kept in this
   * replica meanwhile, a bounded number; one that cannot be kept or followed is told to `onDropped`.
   */
  adopt(job: UnreservedJob, onDropped: (job: UnreservedJob) => void): void;
  /** The upstream accepted the create: the job is followed from now on, first polled after `firstPollMs`. */
  submitted(requestId: string, firstPollMs: number): Promise<void>;
  /**
   * Settles the job once: returns its end (to tell listeners, then `told`) when this call settled it,
   * undefined when it was settled before or is unknown. `refused` frees everything and tells nobody.
   */
  settle(job: JobIdentity, settlement: Settlement): Promise<SettledJob | undefined>;
  /** Listeners have the end: the job is forgotten. */
  told(requestId: string): Promise<void>;
  /**
   * Up to `count` jobs due now, each leased for `leaseMs` (no other replica takes it meanwhile) and, when
   * it needs a poll, within its credential's poll rate.
   */
  leaseDue(count: number, leaseMs: number, pollsPerSecond: number): Promise<TrackedJob[]>;
  /** Polls the job again after `delayMs` (the lease ends then). */
  reschedule(requestId: string, delayMs: number, polls: number): Promise<void>;
  /** The tenant's budgets and jobs in flight (account.usage). */
  usage(tenantId: string, daily: number | undefined, monthly: number | undefined): Promise<JobsUsage>;
  /** An upstream credential's jobs in flight, over every tenant on it. */
  credentialJobsInFlight(credential: string): Promise<number>;
  /** Jobs followed, and the oldest one's admission (epoch ms), for the metrics. */
  backlog(): Promise<{ count: number; oldestAdmittedAtMs: number | undefined }>;
}
