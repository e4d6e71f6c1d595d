// A tracked job as both stores keep it: one JSON record per request id (scripts/includes/jobs.lua writes
// the same shape), read back into a TrackedJob and, once settled, the JobEnd its listeners are told.
import type { SettledJob, TrackedJob } from './book.ts';
import type { JobEnd, JobOutcome, JobRoute } from './job-ends.ts';

export interface StoredJob {
  tenant: string;
  route: JobRoute;
  credential: string;
  cost: number;
  /** The budget periods the reservation was taken in (`d:2026-11-26`, `m:2026-11`). */
  day: string;
  month: string;
  admittedAt: number;
  state: TrackedJob['state'];
  polls: number;
  outcome?: JobOutcome;
  endedAt?: number;
  /** The upstream's final poll answer. */
  record?: string;
}

export function parseStoredJob(raw: string): StoredJob {
  return JSON.parse(raw) as StoredJob;
}

function jobEndOf(requestId: string, job: StoredJob): JobEnd | undefined {
  if (job.state !== 'ended' || job.outcome === undefined || job.endedAt === undefined) return undefined;
  return {
    tenant: job.tenant,
    requestId,
    route: job.route,
    credential: job.credential,
    outcome: job.outcome,
    record: job.record ?? null,
    endedAt: new Date(job.endedAt),
  };
}

export function trackedJobOf(requestId: string, job: StoredJob): TrackedJob {
  return {
    requestId,
    tenantId: job.tenant,
    route: job.route,
    credential: job.credential,
    costMicroUsd: job.cost,
    admittedAtMs: job.admittedAt,
    state: job.state,
    polls: job.polls,
    end: jobEndOf(requestId, job),
  };
}

/** A job this call settled (its record now `ended`), with what the settlement spent. */
export function settledJobOf(
  requestId: string,
  job: StoredJob,
  spentMicroUsd: number,
): SettledJob | undefined {
  const end = jobEndOf(requestId, job);
  return end === undefined ? undefined : { end, spentMicroUsd, admittedAtMs: job.admittedAt };
}
