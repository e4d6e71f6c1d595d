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

// The upstream's X-RateLimit-* headers describe the shared upstream account, not the tenant: never passed.
// Retry-After is (a 503 says when to come back); an upstream 429 is answered by gengate itself.
const PASSED_RESPONSE_HEADERS = [
  'content-type',
  'cache-control',
  'etag',
  'last-modified',
  'retry-after',
] as const;

export function headersForClient(upstream: IncomingHttpHeaders): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of PASSED_RESPONSE_HEADERS) {
    const value = upstream[name];
    if (typeof value === 'string') headers[name] = value;
  }
  return headers;
}

/** The upstream's Retry-After in whole seconds (>= 1), or undefined when it sent none we can read. */
export function retryAfterSeconds(upstream: IncomingHttpHeaders): number | undefined {
  const value = upstream['retry-after'];
  if (typeof value !== 'string' || !/^\d{1,9}$/.test(value)) return undefined;
  return Math.max(1, Number(value));
}
