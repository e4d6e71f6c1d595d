// Every error gengate itself produces, with its status and envelope type (contract section 9).
// Handlers throw `gatewayError(code, message)`; one error handler turns it into the envelope.
import type { ErrorDetail, ErrorType } from '../maxai/envelope.ts';

const ERROR_CODES = {
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
  method_not_allowed: { status: 405, type: 'not_found_error' },
  request_id_conflict: { status: 409, type: 'conflict_error' },
  request_timeout: { status: 408, type: 'validation_error' },
  payload_too_large: { status: 413, type: 'validation_error' },
  unsupported_media_type: { status: 415, type: 'validation_error' },
  rate_limited: { status: 429, type: 'rate_limit_error' },
  too_many_authentication_failures: { status: 429, type: 'rate_limit_error' },
  request_headers_too_large: { status: 431, type: 'validation_error' },
  upstream_rate_limited: { status: 429, type: 'rate_limit_error' },
  internal_error: { status: 500, type: 'unavailable_error' },
  upstream_unavailable: { status: 502, type: 'upstream_error' },
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

export function gatewayError(code: ErrorCode, message: string, options?: GatewayErrorOptions): GatewayError {
  return new GatewayError(code, message, options);
}
