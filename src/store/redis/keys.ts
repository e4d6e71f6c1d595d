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
