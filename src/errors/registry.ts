// Every error gengate itself produces (docs/architecture.md, "Errors"): its wire code, with the code's status
// and envelope type, and its message. Handlers throw `gatewayError(name, values)`, passing only the values
// the message names; one error handler turns the error into the envelope.
import type { ErrorDetail, ErrorType } from '../maxai/envelope.ts';

export const ERROR_CODES = {
  bad_request: { status: 400, type: 'validation_error' },
  invalid_json: { status: 400, type: 'validation_error' },
  invalid_request: { status: 400, type: 'validation_error' },
  invalid_parameter: { status: 400, type: 'validation_error' },
  unknown_parameter: { status: 400, type: 'validation_error' },
  body_not_allowed: { status: 400, type: 'validation_error' },
  missing_api_key: { status: 401, type: 'authentication_error' },
  invalid_api_key: { status: 401, type: 'authentication_error' },
  expired_api_key: { status: 401, type: 'authentication_error' },
  policy_violation: { status: 403, type: 'permission_error' },
  cost_exceeds_limit: { status: 403, type: 'rate_limit_error' },
  route_not_found: { status: 404, type: 'not_found_error' },
  request_not_found: { status: 404, type: 'not_found_error' },
  delivery_not_found: { status: 404, type: 'not_found_error' },
  method_not_allowed: { status: 405, type: 'not_found_error' },
  request_id_conflict: { status: 409, type: 'conflict_error' },
  expectation_failed: { status: 417, type: 'validation_error' },
  idempotency_key_reused: { status: 422, type: 'conflict_error' },
  request_timeout: { status: 408, type: 'validation_error' },
  payload_too_large: { status: 413, type: 'validation_error' },
  unsupported_media_type: { status: 415, type: 'validation_error' },
  rate_limited: { status: 429, type: 'rate_limit_error' },
  too_many_authentication_failures: { status: 429, type: 'rate_limit_error' },
  request_headers_too_large: { status: 431, type: 'validation_error' },
  upstream_rate_limited: { status: 429, type: 'rate_limit_error' },
  budget_exceeded: { status: 429, type: 'rate_limit_error' },
  too_many_jobs_in_flight: { status: 429, type: 'rate_limit_error' },
  internal_error: { status: 500, type: 'unavailable_error' },
  upstream_unavailable: { status: 502, type: 'upstream_error' },
  upstream_invalid_response: { status: 502, type: 'upstream_error' },
  upstream_credential_rejected: { status: 502, type: 'upstream_error' },
  store_unavailable: { status: 503, type: 'unavailable_error' },
  overloaded: { status: 503, type: 'unavailable_error' },
  upstream_timeout: { status: 504, type: 'upstream_error' },
} as const satisfies Record<string, { status: number; type: ErrorType }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface GatewayErrorOptions {
  param?: string;
  details?: ErrorDetail[];
  /** Response headers that belong to this error (`Allow`, `Retry-After`, `WWW-Authenticate`). */
  headers?: Record<string, string>;
  cause?: unknown;
}

/** Built by `gatewayError` only (ESLint refuses `new GatewayError` elsewhere), from a named error. */
export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: ErrorType;
  readonly param: string | undefined;
  readonly details: ErrorDetail[] | undefined;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message: string, options: GatewayErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.name = 'GatewayError';
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.type = ERROR_CODES[code].type;
    this.param = options.param;
    this.details = options.details;
    this.headers = options.headers ?? {};
  }
}

/** A message, fixed or built from the values its function names (typed, so a call site passes them all). */
type MessageTemplate = string | ((values: never) => string);

/** A create that does not fit a budget: amounts in USD as decimal text, the period's end in RFC 3339. */
interface BudgetRefusalValues {
  scope: 'daily' | 'monthly';
  leftUsd: string;
  limitUsd: string;
  costUsd: string;
  resetsAt: string;
}

/** The limit whose whole capacity is below a request's cost. */
interface ExceededLimit {
  id: string;
  limit: number;
  windowSeconds: number;
  cost: number;
}

/**
 * Every error by name: its wire code and its message. A code covers several causes, each a name of its
 * own; a message computed by a domain module (a schema problem, a policy rejection) is one value.
 */
export const NAMED_ERRORS = {
  request_not_http: { code: 'bad_request', message: 'the request is not valid HTTP' },
  request_malformed: { code: 'bad_request', message: 'the request is malformed' },
  http_version_not_served: {
    code: 'bad_request',
    message: 'only HTTP/1.1 and HTTP/1.0 requests are served',
  },
  transfer_encoding_in_http10: {
    code: 'bad_request',
    message: 'Transfer-Encoding is not allowed in an HTTP/1.0 request',
  },
  transfer_encoding_not_chunked: {
    code: 'bad_request',
    message: 'the only Transfer-Encoding accepted is chunked',
  },
  host_field_not_single: {
    code: 'bad_request',
    message: 'an HTTP/1.1 request carries exactly one Host field',
  },
  content_length_mismatch: {
    code: 'invalid_json',
    message: 'the Content-Length header does not match the body',
  },
  body_empty: { code: 'invalid_json', message: 'the request body is empty; send a JSON object' },
  body_not_json: { code: 'invalid_json', message: 'the request body is not valid JSON' },
  body_not_utf8_json: { code: 'invalid_json', message: 'the request body is not valid UTF-8 JSON' },
  body_too_deep: {
    code: 'invalid_json',
    message: ({ maxDepth }: { maxDepth: number }) => `the request body nests deeper than ${maxDepth} levels`,
  },
  body_too_many_values: {
    code: 'invalid_json',
    message: ({ maxValues }: { maxValues: number }) => `the request body holds more than ${maxValues} values`,
  },
  // The member's path is the client's text: named once, bounded, in `param` (src/json/echoed-name.ts).
  body_reserved_member: {
    code: 'invalid_json',
    message: 'the member at param is a reserved member name (__proto__ and constructor are not accepted)',
  },
  body_duplicate_member: {
    code: 'invalid_json',
    message: 'the member at param appears more than once; member names must be unique',
  },
  body_not_object: { code: 'invalid_json', message: 'the request body must be a JSON object' },
  field_repeated: {
    code: 'invalid_request',
    message: ({ field }: { field: 'Authorization' | 'Content-Type' }) =>
      `send one ${field} field, not several`,
  },
  invalid_parameter: { code: 'invalid_parameter', message: ({ problem }: { problem: string }) => problem },
  unknown_parameter: {
    code: 'unknown_parameter',
    message: 'the member named by param is not a known parameter',
  },
  body_not_allowed: {
    code: 'body_not_allowed',
    message: ({ method }: { method: string }) => `${method} requests must not carry a body`,
  },
  missing_api_key: {
    code: 'missing_api_key',
    message: 'send your gengate key as "Authorization: Bearer <key>"',
  },
  invalid_api_key: { code: 'invalid_api_key', message: 'the API key is not valid' },
  expired_api_key: {
    code: 'expired_api_key',
    message: ({ keyPrefix }: { keyPrefix: string }) => `the API key ${keyPrefix}… has expired`,
  },
  policy_violation: { code: 'policy_violation', message: ({ reason }: { reason: string }) => reason },
  cost_exceeds_limit: {
    code: 'cost_exceeds_limit',
    message: ({ cost, id, limit, windowSeconds }: ExceededLimit) =>
      `this request costs ${cost} but rate limit "${id}" admits at most ${limit} per ${windowSeconds} s`,
  },
  cost_exceeds_unnamed_limit: {
    code: 'cost_exceeds_limit',
    message: 'this request costs more than a rate limit can ever admit',
  },
  route_not_found: { code: 'route_not_found', message: 'no such route; see the route table in the docs' },
  // Near misses of a path of the table (src/routing/route-table.ts, nearMissOf): the same 404, saying why.
  route_id_not_uuid: {
    code: 'route_not_found',
    message: 'no such route: the id in the path must be a UUID, such as 0f6c2a4e-8d1b-4c3a-9e7f-5a2b1c0d9e8f',
  },
  route_query_string: {
    code: 'route_not_found',
    message: 'no such route: the gateway takes no query string; remove everything from "?"',
  },
  route_trailing_slash: { code: 'route_not_found', message: 'no such route: remove the trailing slash' },
  request_not_found: {
    code: 'request_not_found',
    message: ({ requestId }: { requestId: string }) => `request ${requestId} was not found`,
  },
  delivery_not_found: {
    code: 'delivery_not_found',
    message: ({ deliveryId }: { deliveryId: string }) => `webhook delivery ${deliveryId} was not found`,
  },
  method_not_allowed: {
    code: 'method_not_allowed',
    // Without a method (one the caller chose not to echo), the message says "this method".
    message: ({ method, allow }: { method: string | undefined; allow: string }) =>
      `${method ?? 'this method'} is not allowed here; use ${allow}`,
  },
  request_id_in_use: {
    code: 'request_id_conflict',
    message: ({ requestId }: { requestId: string }) =>
      `requestId ${requestId} is already in use; submit with another requestId`,
  },
  request_id_in_progress: {
    code: 'request_id_conflict',
    message: ({ requestId }: { requestId: string }) =>
      `a submission with requestId ${requestId} is still in progress or its outcome is unknown; ` +
      'poll it, or submit with another requestId',
  },
  request_id_reused: {
    code: 'idempotency_key_reused',
    message: ({ requestId }: { requestId: string }) =>
      `requestId ${requestId} was already used with another body or on another route; ` +
      'submit with another requestId',
  },
  expectation_not_supported: {
    code: 'expectation_failed',
    message: 'the only expectation this gateway meets is 100-continue',
  },
  request_timeout: { code: 'request_timeout', message: 'the request was not received in time' },
  payload_too_large: {
    code: 'payload_too_large',
    message: 'the request body is larger than this gateway accepts',
  },
  content_type_not_json: {
    code: 'unsupported_media_type',
    message: 'request bodies must be application/json',
  },
  charset_not_utf8: {
    code: 'unsupported_media_type',
    message: 'request bodies must be application/json in UTF-8',
  },
  json_body_missing: {
    code: 'unsupported_media_type',
    message: 'send a JSON object with Content-Type: application/json',
  },
  body_compressed: { code: 'unsupported_media_type', message: 'compressed request bodies are not accepted' },
  rate_limited: {
    code: 'rate_limited',
    message: ({ limitId }: { limitId: string | undefined }) =>
      `${limitId === undefined ? 'a rate limit' : `rate limit "${limitId}"`} ` +
      'has no room for this request; retry later',
  },
  too_many_authentication_failures: {
    code: 'too_many_authentication_failures',
    message: ({ retryAfterSeconds }: { retryAfterSeconds: number }) =>
      `too many failed authentications from this address; retry in ${retryAfterSeconds} s`,
  },
  request_headers_too_large: {
    code: 'request_headers_too_large',
    message: 'the request headers are larger than this gateway accepts',
  },
  upstream_rate_limited: {
    code: 'upstream_rate_limited',
    message: 'the generation service is rate limiting this gateway',
  },
  budget_exceeded: {
    code: 'budget_exceeded',
    message: ({ scope, leftUsd, limitUsd, costUsd, resetsAt }: BudgetRefusalValues) =>
      `${scope} budget exceeded: this request is expected to cost ${costUsd} USD and ${leftUsd} USD of ` +
      `${limitUsd} USD is left until ${resetsAt}`,
  },
  too_many_jobs_in_flight: {
    code: 'too_many_jobs_in_flight',
    message: ({ scope, limit }: { scope: 'tenant' | 'credential'; limit: number }) =>
      scope === 'tenant'
        ? `this tenant has ${limit} unfinished jobs, its most at once; retry when one ends`
        : `the upstream account has ${limit} unfinished jobs, its most at once; retry when one ends`,
  },
  internal_error: { code: 'internal_error', message: 'the gateway failed to handle this request' },
  upstream_unreachable: {
    code: 'upstream_unavailable',
    message: 'the generation service could not be reached',
  },
  upstream_invalid_status: {
    code: 'upstream_unavailable',
    message: 'the generation service sent an invalid status',
  },
  upstream_response_too_large: {
    code: 'upstream_unavailable',
    message: 'the generation service sent a response larger than allowed',
  },
  upstream_not_json: {
    code: 'upstream_invalid_response',
    message: 'the generation service sent a response that is not JSON',
  },
  upstream_foreign_record: {
    code: 'upstream_invalid_response',
    message: 'the generation service answered about another request than the one asked for',
  },
  upstream_credential_rejected: {
    code: 'upstream_credential_rejected',
    message: "the generation service refused this gateway's own credential; your API key is not at fault",
  },
  rate_limit_store_unavailable: {
    code: 'store_unavailable',
    message: 'the rate-limit store is unavailable; retry shortly',
  },
  ownership_store_unavailable: {
    code: 'store_unavailable',
    message: 'the request ownership store is unavailable; retry shortly',
  },
  usage_store_unavailable: {
    code: 'store_unavailable',
    message: 'usage is unavailable while the store is; retry shortly',
  },
  replica_overloaded: { code: 'overloaded', message: 'this gateway replica is overloaded; retry shortly' },
  bytes_in_flight_full: {
    code: 'overloaded',
    message: 'this gateway replica holds as many requests and answers in memory as it may; retry shortly',
  },
  upstream_queue_full: {
    code: 'overloaded',
    message: 'this gateway replica has too many requests waiting for the generation service; retry shortly',
  },
  upstream_timeout: {
    code: 'upstream_timeout',
    message: 'the generation service did not answer in time',
  },
} as const satisfies Record<string, { code: ErrorCode; message: MessageTemplate }>;

export type ErrorName = keyof typeof NAMED_ERRORS;

/**
 * What `gatewayError(name, ...)` takes after the name: the values of a template, then the options; for a
 * fixed message, the options alone.
 */
export type ErrorArguments<N extends ErrorName> = (typeof NAMED_ERRORS)[N]['message'] extends (
  values: infer Values,
) => string
  ? [values: Values, options?: GatewayErrorOptions]
  : [options?: GatewayErrorOptions];

export function gatewayError<N extends ErrorName>(name: N, ...args: ErrorArguments<N>): GatewayError {
  const { code, message }: { code: ErrorCode; message: MessageTemplate } = NAMED_ERRORS[name];
  // ErrorArguments ties the values to the template's own parameter; here only their position differs.
  const [first, second] = args as [unknown, GatewayErrorOptions?];
  if (typeof message === 'string')
    return new GatewayError(code, message, first as GatewayErrorOptions | undefined);
  return new GatewayError(code, message(first as never), second);
}
