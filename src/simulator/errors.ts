// The simulator's error codes, answered in the service's envelope by one error handler. The real
// service's full code list is not published (docs/simulator.md, "What is a guess"); these follow the style of
// the known ones.
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { errorEnvelope, type ErrorDetail, type ErrorType } from '../maxai/envelope.ts';

const SIMULATED_ERRORS = {
  invalid_json: { status: 400, type: 'validation_error' },
  invalid_parameter: { status: 400, type: 'validation_error' },
  missing_api_key: { status: 401, type: 'authentication_error' },
  invalid_api_key: { status: 401, type: 'authentication_error' },
  route_not_found: { status: 404, type: 'not_found_error' },
  request_not_found: { status: 404, type: 'not_found_error' },
  file_not_found: { status: 404, type: 'not_found_error' },
  method_not_allowed: { status: 405, type: 'not_found_error' },
  request_id_conflict: { status: 409, type: 'conflict_error' },
  payload_too_large: { status: 413, type: 'validation_error' },
  unsupported_media_type: { status: 415, type: 'validation_error' },
  too_many_queued_requests: { status: 429, type: 'rate_limit_error' },
  rate_limit_exceeded: { status: 429, type: 'rate_limit_error' },
  internal_error: { status: 500, type: 'unavailable_error' },
  service_unavailable: { status: 503, type: 'unavailable_error' },
} as const satisfies Record<string, { status: number; type: ErrorType }>;

export type SimulatedErrorCode = keyof typeof SIMULATED_ERRORS;

export interface SimulatedErrorOptions {
  param?: string;
  details?: ErrorDetail[];
  headers?: Record<string, string>;
}

class SimulatedError extends Error {
  readonly code: SimulatedErrorCode;
  readonly status: number;
  readonly options: SimulatedErrorOptions;

  constructor(code: SimulatedErrorCode, message: string, options: SimulatedErrorOptions = {}) {
    super(message);
    this.name = 'SimulatedError';
    this.code = code;
    this.status = SIMULATED_ERRORS[code].status;
    this.options = options;
  }
}

export function simulatedError(code: SimulatedErrorCode, message: string, options?: SimulatedErrorOptions) {
  return new SimulatedError(code, message, options);
}

function sendSimulatedError(reply: FastifyReply, error: SimulatedError): FastifyReply {
  const { param, details, headers = {} } = error.options;
  return reply
    .code(error.status)
    .headers(headers)
    .type('application/json')
    .send(
      errorEnvelope(error.status, {
        code: error.code,
        type: SIMULATED_ERRORS[error.code].type,
        message: error.message,
        param,
        details,
      }),
    );
}

function fromFastifyError(error: FastifyError): SimulatedError {
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
    return simulatedError('payload_too_large', 'the request body is too large');
  if (error.statusCode !== undefined && error.statusCode < 500)
    return simulatedError('invalid_json', error.message);
  return simulatedError('internal_error', 'the simulator failed to handle this request');
}

export function installSimulatedErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: unknown, request, reply) => {
    if (error instanceof SimulatedError) return sendSimulatedError(reply, error);
    const mapped = fromFastifyError(error as FastifyError);
    if (mapped.code === 'internal_error') request.log.error({ err: error }, 'unhandled error');
    return sendSimulatedError(reply, mapped);
  });
  app.setNotFoundHandler((request, reply) =>
    sendSimulatedError(
      reply,
      simulatedError('route_not_found', `no route ${request.method} ${request.url.split('?')[0] ?? ''}`),
    ),
  );
}
