// Where gengate keeps what in Redis. ioredis adds `store.redis.keyPrefix` in front of every key.
import { canonicalRequestId } from '../../ownership/store.ts';

/**
 * Every key of one tenant carries the same Cluster hash tag, so multi-key scripts over a tenant's keys
 * never cross slots.
 */
function tenantKey(tenantId: string, suffix: string): string {
  return `{tenant:${tenantId}}:${suffix}`;
}

/** All of a tenant's keys share one hash tag, so the multi-key script never crosses Cluster slots. */
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

/** A tenant's budgets by period and its count of jobs in flight (scripts/includes/jobs.lua). */
export function tenantJobsKey(tenantId: string): string {
  return tenantKey(tenantId, 'jobs');
}

/** An upstream credential's count of jobs in flight, shared by every tenant on it. */
export function credentialJobsKey(credential: string): string {
  return `credential:${credential}:jobs-in-flight`;
}

/** An upstream credential's rate of tracker polls, summed over every replica. */
export function credentialPollsKey(credential: string): string {
  return `credential:${credential}:tracker-polls`;
}

/** Every tracked job's record, its next due time and its admission time (scripts/includes/jobs.lua). */
export const JOB_RECORDS_KEY = 'jobs:records';
export const JOBS_DUE_KEY = 'jobs:due';
export const JOBS_ADMITTED_KEY = 'jobs:admitted';
