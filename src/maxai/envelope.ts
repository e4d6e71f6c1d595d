// The service's response envelopes (docs/architecture.md, "Errors").
export type ErrorType =
  | 'validation_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'conflict_error'
  | 'rate_limit_error'
  | 'upstream_error'
  | 'unavailable_error';

export interface ErrorDetail {
  /** Dotted path of the field concerned (`dimensions.width`). */
  param: string;
  message: string;
}

export interface ErrorBody {
  code: string;
  type: ErrorType;
  message: string;
  param?: string;
  details?: ErrorDetail[];
}

export interface ErrorEnvelope {
  status: number;
  error: ErrorBody;
}

export interface SuccessEnvelope<Data> {
  status: 200;
  data: Data;
}

/** Members always in the documented order; `param` and `details` only when given. */
export function errorEnvelope(status: number, error: ErrorBody): ErrorEnvelope {
  const { code, type, message, param, details } = error;
  return {
    status,
    error: {
      code,
      type,
      message,
      ...(param === undefined ? {} : { param }),
      ...(details === undefined ? {} : { details }),
    },
  };
}

export function successEnvelope<Data>(data: Data): SuccessEnvelope<Data> {
  return { status: 200, data };
}
