// Where gengate keeps what in Redis. ioredis adds `store.redis.keyPrefix` in front of every key.
import { canonicalRequestId } from '../../ownership/store.ts';

/** Every key of one tenant carries the same Cluster hash tag: a script over its keys never crosses slots. */
function tenantKey(tenantId: string, suffix: string): string {
  return `{tenant:${tenantId}}:${suffix}`;
}

/** One of a tenant's rate limits (GCRA state). */
export function rateLimitKey(tenantId: string, limitId: string): string {
  return tenantKey(tenantId, `limit:${limitId}`);
}

/** One key per request id, whoever owns it: ids are spread over a Cluster's slots. */
export function ownershipKey(requestId: string): string {
  return `request:${canonicalRequestId(requestId)}`;
}

/** A tenant's usage counters for one period: a calendar month (`2025-01`) or `lifetime`. */
export function usageKey(tenantId: string, period: string): string {
  return tenantKey(tenantId, `usage:${period}`);
}

/** Marks a request id whose reported cost has been counted, so that each is counted once. */
export function costCountedKey(tenantId: string, requestId: string): string {
  return tenantKey(tenantId, `usage-cost-counted:${requestId}`);
}

// Every key of jobs shares one hash tag: a reservation, a settlement and a lease each touch a tenant's, a
// credential's and the jobs' keys in one script, which a Redis Cluster runs only within one slot. So on a
// Cluster the jobs live on one node (docs/budgets.md, "Redis Cluster").
const JOBS_TAG = '{jobs}';

/** A tenant's budgets by period and its count of jobs in flight (scripts/includes/jobs.lua). */
export function tenantJobsKey(tenantId: string): string {
  return `${JOBS_TAG}:tenant:${tenantId}`;
}

/** An upstream credential's count of jobs in flight, shared by every tenant on it. */
export function credentialJobsKey(credential: string): string {
  return `${JOBS_TAG}:credential:${credential}:jobs-in-flight`;
}

/**
 * An upstream credential's log of tracker polls in the last second, summed over every replica (a sorted
 * set; `tracker-polls`, a GCRA state, was its key before).
 */
export function credentialPollsKey(credential: string): string {
  return `${JOBS_TAG}:credential:${credential}:tracker-poll-log`;
}

/** Every tracked job's record, its next due time and its admission time (scripts/includes/jobs.lua). */
export const JOB_RECORDS_KEY = `${JOBS_TAG}:records`;
export const JOBS_DUE_KEY = `${JOBS_TAG}:due`;
export const JOBS_ADMITTED_KEY = `${JOBS_TAG}:admitted`;

/** Marks a job followed after the store failed at its admission (scripts/adoptJobs-n.lua): once only. */
export function adoptedJobKey(requestId: string): string {
  return `${JOBS_TAG}:adopted:${requestId}`;
}
