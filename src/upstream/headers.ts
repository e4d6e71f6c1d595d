// Header allowlists in both directions. Building new header sets (rather than deleting known-bad ones)
// means hop-by-hop, internal and credential headers can never leak by being forgotten.
import type { IncomingHttpHeaders } from 'node:http';

const USER_AGENT = 'gengate';

export function headersForUpstream(
  token: string,
  requestId: string,
  body: Buffer | undefined,
): Record<string, string> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${token}`,
    accept: 'application/json',
    'user-agent': USER_AGENT,
    'x-request-id': requestId,
  };
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(body.length);
  }
  return headers;
}

/**
 * The longest wait the upstream may ask a tenant for. A Retry-After beyond it is cut to it: a client
 * that honours the header must never be told to wait for years (a wrong or hostile upstream value).
 */
export const MAX_UPSTREAM_RETRY_AFTER_SECONDS = 3600;
// Retry-After means something on a 503 (when to come back) and a 429 (answered by gengate itself, with
// the same bound); on any other status it is dropped.
const RETRY_AFTER_STATUSES = new Set([429, 503]);
/** Every answer passed on is JSON the gateway checked (src/upstream/answer.ts); its type is gengate's. */
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';
/** Delta-seconds (RFC 9110 section 10.2.3); fifteen digits stay exact as a double. */
const DELTA_SECONDS = /^\d{1,15}$/;

/**
 * The headers of an upstream answer passed on to the tenant: an allowlist, each value gengate's own or
 * validated. Never the upstream's cache directives or validators (Cache-Control, ETag, Last-Modified):
 * a tenant's answer is private and gengate sets its own (src/gateway/private-answers.ts); never its
 * X-RateLimit-* headers, which describe the shared upstream account, not the tenant.
 */
export function headersForClient(status: number, upstream: IncomingHttpHeaders): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': JSON_CONTENT_TYPE };
  if (RETRY_AFTER_STATUSES.has(status)) {
    const retryAfter = retryAfterSeconds(upstream);
    if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
  }
  return headers;
}

/**
 * The upstream's Retry-After in whole seconds, from 1 to MAX_UPSTREAM_RETRY_AFTER_SECONDS, or undefined
 * when it sent none we can read (an HTTP date, a negative or fractional value, several fields).
 */
export function retryAfterSeconds(upstream: IncomingHttpHeaders): number | undefined {
  const value = upstream['retry-after'];
  if (typeof value !== 'string' || !DELTA_SECONDS.test(value)) return undefined;
  return Math.min(MAX_UPSTREAM_RETRY_AFTER_SECONDS, Math.max(1, Number(value)));
}
