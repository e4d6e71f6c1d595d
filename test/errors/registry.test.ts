// The error registry: every named error answers with a wire code of the code table, and its template
// writes the message the contract and the other suites expect, from the values the call site passes.
import { describe, expect, test } from 'vitest';
import {
  ERROR_CODES,
  NAMED_ERRORS,
  gatewayError,
  type ErrorArguments,
  type ErrorName,
  type GatewayError,
} from '../../src/errors/registry.ts';

const LIMIT = { id: 'images-per-minute', limit: 10, windowSeconds: 60, cost: 12 };

// Every named error with sample values and the message they give; the type keeps it complete.
const SAMPLES: { [Name in ErrorName]: [message: string, ...args: ErrorArguments<Name>] } = {
  request_not_http: ['the request is not valid HTTP'],
  request_malformed: ['the request is malformed'],
  http_version_not_served: ['only HTTP/1.1 and HTTP/1.0 requests are served'],
  transfer_encoding_in_http10: ['Transfer-Encoding is not allowed in an HTTP/1.0 request'],
  transfer_encoding_not_chunked: ['the only Transfer-Encoding accepted is chunked'],
  host_field_not_single: ['an HTTP/1.1 request carries exactly one Host field'],
  content_length_mismatch: ['the Content-Length header does not match the body'],
  body_empty: ['the request body is empty; send a JSON object'],
  body_not_json: ['the request body is not valid JSON'],
  body_not_utf8_json: ['the request body is not valid UTF-8 JSON'],
  body_too_deep: ['the request body nests deeper than 64 levels', { maxDepth: 64 }],
  body_too_many_values: ['the request body holds more than 10000 values', { maxValues: 10_000 }],
  body_reserved_member: [
    'the member at param is a reserved member name (__proto__ and constructor are not accepted)',
  ],
  body_duplicate_member: ['the member at param appears more than once; member names must be unique'],
  body_not_object: ['the request body must be a JSON object'],
  field_repeated: ['send one Authorization field, not several', { field: 'Authorization' }],
  invalid_parameter: ['samples must be at most 20', { problem: 'samples must be at most 20' }],
  unknown_parameter: ['the member named by param is not a known parameter'],
  body_not_allowed: ['GET requests must not carry a body', { method: 'GET' }],
  missing_api_key: ['send your gengate key as "Authorization: Bearer <key>"'],
  invalid_api_key: ['the API key is not valid'],
  expired_api_key: ['the API key ggk_AbCd… has expired', { keyPrefix: 'ggk_AbCd' }],
  policy_violation: ['nsfw must be false', { reason: 'nsfw must be false' }],
  cost_exceeds_limit: [
    'this request costs 12 but rate limit "images-per-minute" admits at most 10 per 60 s',
    LIMIT,
  ],
  cost_exceeds_unnamed_limit: ['this request costs more than a rate limit can ever admit'],
  route_not_found: ['no such route; see the route table in the docs'],
  route_id_not_uuid: [
    'no such route: the id in the path must be a UUID, such as 0f6c2a4e-8d1b-4c3a-9e7f-5a2b1c0d9e8f',
  ],
  route_query_string: ['no such route: the gateway takes no query string; remove everything from "?"'],
  route_trailing_slash: ['no such route: remove the trailing slash'],
  request_not_found: [
    'request 0b7e4f1a-5c2d-4e8f-9a1b-2c3d4e5f6a7b was not found',
    { requestId: '0b7e4f1a-5c2d-4e8f-9a1b-2c3d4e5f6a7b' },
  ],
  delivery_not_found: [
    'webhook delivery 0b7e4f1a-5c2d-4e8f-9a1b-2c3d4e5f6a7b was not found',
    { deliveryId: '0b7e4f1a-5c2d-4e8f-9a1b-2c3d4e5f6a7b' },
  ],
  method_not_allowed: ['PUT is not allowed here; use GET, DELETE', { method: 'PUT', allow: 'GET, DELETE' }],
  request_id_in_use: ['requestId r-1 is already in use; submit with another requestId', { requestId: 'r-1' }],
  request_id_in_progress: [
    'a submission with requestId r-1 is still in progress or its outcome is unknown; poll it, or submit ' +
      'with another requestId',
    { requestId: 'r-1' },
  ],
  request_id_reused: [
    'requestId r-1 was already used with another body or on another route; submit with another requestId',
    { requestId: 'r-1' },
  ],
  expectation_not_supported: ['the only expectation this gateway meets is 100-continue'],
  request_timeout: ['the request was not received in time'],
  payload_too_large: ['the request body is larger than this gateway accepts'],
  content_type_not_json: ['request bodies must be application/json'],
  charset_not_utf8: ['request bodies must be application/json in UTF-8'],
  json_body_missing: ['send a JSON object with Content-Type: application/json'],
  body_compressed: ['compressed request bodies are not accepted'],
  rate_limited: [
    'rate limit "images-per-minute" has no room for this request; retry later',
    { limitId: 'images-per-minute' },
  ],
  too_many_authentication_failures: [
    'too many failed authentications from this address; retry in 30 s',
    { retryAfterSeconds: 30 },
  ],
  request_headers_too_large: ['the request headers are larger than this gateway accepts'],
  upstream_rate_limited: ['the generation service is rate limiting this gateway'],
  budget_exceeded: [
    'monthly budget exceeded: this request is expected to cost 0.01 USD and 0 USD of 0.5 USD is left until 2026-12-01T00:00:00.000Z',
    {
      scope: 'monthly',
      leftUsd: '0',
      limitUsd: '0.5',
      costUsd: '0.01',
      resetsAt: '2026-12-01T00:00:00.000Z',
    },
  ],
  too_many_jobs_in_flight: [
    'this tenant has 3 unfinished jobs, its most at once; retry when one ends',
    { scope: 'tenant', limit: 3 },
  ],
  internal_error: ['the gateway failed to handle this request'],
  upstream_unreachable: ['the generation service could not be reached'],
  upstream_invalid_status: ['the generation service sent an invalid status'],
  upstream_response_too_large: ['the generation service sent a response larger than allowed'],
  upstream_not_json: ['the generation service sent a response that is not JSON'],
  upstream_foreign_record: ['the generation service answered about another request than the one asked for'],
  upstream_credential_rejected: [
    "the generation service refused this gateway's own credential; your API key is not at fault",
  ],
  rate_limit_store_unavailable: ['the rate-limit store is unavailable; retry shortly'],
  ownership_store_unavailable: ['the request ownership store is unavailable; retry shortly'],
  usage_store_unavailable: ['usage is unavailable while the store is; retry shortly'],
  replica_overloaded: ['this gateway replica is overloaded; retry shortly'],
  bytes_in_flight_full: [
    'this gateway replica holds as many requests and answers in memory as it may; retry shortly',
  ],
  upstream_queue_full: [
    'this gateway replica has too many requests waiting for the generation service; retry shortly',
  ],
  upstream_timeout: ['the generation service did not answer in time'],
};

// The loop below passes each name's own sample; the per-name types are checked in SAMPLES.
const buildError = gatewayError as (name: ErrorName, ...args: unknown[]) => GatewayError;

describe('the error registry', () => {
  test('every named error has a wire code of the code table, and every wire code is used', () => {
    const usedCodes = new Set(Object.values(NAMED_ERRORS).map((entry) => entry.code));
    for (const code of usedCodes) expect(Object.keys(ERROR_CODES)).toContain(code);
    expect([...usedCodes].sort()).toEqual(Object.keys(ERROR_CODES).sort());
  });

  test.each(Object.keys(SAMPLES) as ErrorName[])('%s writes its message from the values given', (name) => {
    const [message, ...args] = SAMPLES[name];
    const error = buildError(name, ...args);
    const { code } = NAMED_ERRORS[name];
    expect(error).toMatchObject({ code, message, ...ERROR_CODES[code] });
  });

  test('a template and a fixed message of one code carry its status and envelope type', () => {
    expect(gatewayError('body_too_deep', { maxDepth: 64 })).toMatchObject({
      code: 'invalid_json',
      status: 400,
      type: 'validation_error',
    });
    expect(gatewayError('request_id_in_progress', { requestId: 'r-1' })).toMatchObject({
      code: 'request_id_conflict',
      status: 409,
      type: 'conflict_error',
    });
    expect(gatewayError('upstream_queue_full')).toMatchObject({
      code: 'overloaded',
      status: 503,
      type: 'unavailable_error',
    });
  });

  test('a method the caller does not name, or a limit it cannot name, is written in words', () => {
    expect(gatewayError('method_not_allowed', { method: undefined, allow: 'POST' }).message).toBe(
      'this method is not allowed here; use POST',
    );
    expect(gatewayError('rate_limited', { limitId: undefined }).message).toBe(
      'a rate limit has no room for this request; retry later',
    );
  });

  test('the options pass through, after the values or alone', () => {
    const cause = new Error('socket hang up');
    const details = [{ param: 'samples', message: 'must be at most 20' }];
    expect(
      gatewayError(
        'invalid_parameter',
        { problem: 'samples must be at most 20' },
        { param: 'samples', details },
      ),
    ).toMatchObject({ param: 'samples', details, headers: {} });
    const unreachable = gatewayError('upstream_unreachable', { cause });
    expect(unreachable.cause).toBe(cause);
    expect(gatewayError('replica_overloaded', { headers: { 'retry-after': '2' } }).headers).toEqual({
      'retry-after': '2',
    });
  });

  test('a call site must pass exactly the values its template names', () => {
    // Checked by `npm run typecheck`; each call below is refused by the types.
    const refused = [
      // @ts-expect-error -- a template needs its values
      () => gatewayError('body_too_deep'),
      // @ts-expect-error -- a value of the wrong type
      () => gatewayError('body_too_deep', { maxDepth: '64' }),
      // @ts-expect-error -- a value the template does not name
      () => gatewayError('body_too_deep', { maxDepth: 64, levels: 3 }),
      // @ts-expect-error -- a fixed message takes no values
      () => gatewayError('body_empty', { maxDepth: 64 }),
      // @ts-expect-error -- a wire code shared by several messages is not a name
      () => gatewayError('invalid_json'),
    ];
    expect(refused).toHaveLength(5);
  });
});
