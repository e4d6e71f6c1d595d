// The upstream is a peer gengate does not trust: its answer is judged before anything of it reaches a
// tenant, is stored for an idempotent replay or is metered. Only JSON is passed on; a poll's record must
// be about the request in the path; a refusal of gengate's own credential is gengate's problem, never
// shown to the tenant as a problem with its key; the upstream's rate limiting is answered by gengate.
import type { RouteId } from '../config/route-ids.ts';
import { gatewayError, type GatewayError } from '../errors/registry.ts';
import * as Char from '../json/char-codes.ts';
import { canonicalRequestId } from '../ownership/store.ts';
import { readRecordSummary } from '../usage/record-summary.ts';
import type { UpstreamResponse } from './client.ts';
import { headersForClient, retryAfterSeconds } from './headers.ts';

/** What is logged of an answer refused as invalid: enough to recognise it, bounded whatever it holds. */
export interface ReceivedAnswer {
  status: number;
  contentType: string | undefined;
  bytes: number;
  /** The body's first bytes as text, for the operator to see what came instead of JSON. */
  start: string;
}

export type UpstreamVerdict =
  | { kind: 'pass'; status: number; headers: Record<string, string> }
  /** The upstream refused gengate's credential (its 401 or 403). */
  | { kind: 'credential_rejected'; error: GatewayError; status: number }
  /** Not an answer to pass on (not JSON, or about another request): logged with what came. */
  | { kind: 'invalid'; error: GatewayError; received: ReceivedAnswer }
  /** The upstream's 429, answered by gengate with the upstream's (bounded) Retry-After. */
  | { kind: 'rate_limited'; error: GatewayError };

const CREDENTIAL_REFUSALS = new Set([401, 403]);
const RECEIVED_START_BYTES = 64;
const RECEIVED_CONTENT_TYPE_CHARS = 100;
/** `application/json`, with parameters or none, in any case (RFC 9110 media types are case-insensitive). */
const JSON_MEDIA_TYPE = /^application\/json\s*(?:;|$)/i;
const POLL_ROUTES: ReadonlySet<RouteId> = new Set(['images.get', 'videos.get']);

function receivedAnswer(response: UpstreamResponse): ReceivedAnswer {
  const contentType = response.headers['content-type'];
  return {
    status: response.status,
    contentType:
      typeof contentType === 'string' ? contentType.slice(0, RECEIVED_CONTENT_TYPE_CHARS) : undefined,
    bytes: response.body.length,
    start: response.body.toString('utf8', 0, RECEIVED_START_BYTES),
  };
}

/** Whether the answer is declared JSON and its body opens as a JSON object does. */
function isJsonObject(response: UpstreamResponse): boolean {
  const contentType = response.headers['content-type'];
  if (typeof contentType !== 'string' || !JSON_MEDIA_TYPE.test(contentType)) return false;
  const { body } = response;
  for (let index = 0; index < body.length; index += 1) {
    const byte = body[index];
    if (
      byte === Char.SPACE ||
      byte === Char.TAB ||
      byte === Char.LINE_FEED ||
      byte === Char.CARRIAGE_RETURN
    ) {
      continue;
    }
    return byte === Char.OPEN_OBJECT;
  }
  return false;
}

/**
 * The verdict on one upstream answer to `route`, whose path named `requestId` (polls). A 2xx poll is
 * about its request when its `data.id` is that id, as the service treats ids (case-insensitively).
 */
export function judgeUpstreamAnswer(
  route: RouteId,
  requestId: string | undefined,
  response: UpstreamResponse,
): UpstreamVerdict {
  const { status } = response;
  if (CREDENTIAL_REFUSALS.has(status)) {
    return { kind: 'credential_rejected', error: gatewayError('upstream_credential_rejected'), status };
  }
  if (status === 429) {
    const retryAfter = retryAfterSeconds(response.headers);
    return {
      kind: 'rate_limited',
      error: gatewayError(
        'upstream_rate_limited',
        retryAfter === undefined ? {} : { headers: { 'retry-after': String(retryAfter) } },
      ),
    };
  }
  // Nothing to pass on and nothing to inject (a DELETE's answer is not documented): a 204 may be empty.
  if (status < 300 && response.body.length === 0) return { kind: 'pass', status, headers: {} };
  if (!isJsonObject(response)) {
    return { kind: 'invalid', error: gatewayError('upstream_not_json'), received: receivedAnswer(response) };
  }
  if (status < 300 && requestId !== undefined && POLL_ROUTES.has(route)) {
    const { id } = readRecordSummary(response.body);
    if (id === undefined || canonicalRequestId(id) !== canonicalRequestId(requestId)) {
      return {
        kind: 'invalid',
        error: gatewayError('upstream_foreign_record'),
        received: receivedAnswer(response),
      };
    }
  }
  return { kind: 'pass', status, headers: headersForClient(status, response.headers) };
}
