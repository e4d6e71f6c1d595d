// The store as the gateway sees it: one part holding rate limits, usage, request ownership and the
// admission that decides a request's id and charge together, whichever backend keeps them.
import type { Admission } from '../admission/admission.ts';
import type { TenantConfig } from '../config/schema.ts';
import type { JobBook } from '../jobs/book.ts';
import type { JobEnds } from '../jobs/job-ends.ts';
import type { OwnershipStore } from '../ownership/store.ts';
import type { RateLimiter } from '../ratelimit/types.ts';
import type { UsageMeter } from '../usage/meter.ts';

/** What one backend opens: in this process (src/store/memory/) or on Redis (src/store/redis/). */
export interface StoreBackend {
  limiter: RateLimiter;
  usage: UsageMeter;
  /** Who owns each request id; shared by every replica when the store is Redis. */
  ownership: OwnershipStore;
  /** A request's id and charge decided together (one store call on a single Redis). */
  admission: Admission;
  /** Reservations, the jobs to follow and their settlement (docs/budgets.md). */
  jobs: JobBook;
  close(): Promise<void>;
}

/** What the store's job book needs to know of the tracker (src/jobs/book.ts). */
export interface StoreJobOptions {
  /** How long a reserved job waits for its create's answer before the tracker asks the upstream. */
  answerWaitMs: number;
  leaseMs: number;
  maxAgeMs: number;
  /** The configured credentials, read at each lease (a reload may change them). */
  credentials: () => readonly string[];
  /** Whether a tenant has a budget: then a Redis without persistence is worth a warning at start-up. */
  budgets: boolean;
}

export interface GatewayStore extends StoreBackend {
  /**
   * Every job's end, told once its settlement is written (src/jobs/job-ends.ts): `store.jobEnds.listen(fn)`
   * on each replica; the replica that settles a job tells its own listeners.
   */
  jobEnds: JobEnds;
  /** Starts the rate-limit decision counters of these tenants' limits at 0 (at start-up and on reload). */
  startTenantCountersAtZero(tenants: readonly TenantConfig[]): void;
}
