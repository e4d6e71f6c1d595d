// The one place where failures become the service's error envelope, including Fastify's own errors
// (bad content type, oversized body, unknown route), so clients see a single error format.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { METHODS } from 'node:http';
import { errorEnvelope } from '../maxai/envelope.ts';
import { allowedMethodsAt, nearMissOf } from '../routing/route-table.ts';
import { GatewayError, gatewayError, type ErrorCode } from './registry.ts';

// Fastify's own error codes that describe a client mistake, mapped to gengate codes.
function fromFastifyError(error: FastifyError): GatewayError | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return gatewayError('content_type_not_json');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return gatewayError('content_length_mismatch');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return gatewayError('payload_too_large');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return gatewayError('body_empty');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return gatewayError('body_not_json');
    default:
      return undefined;
  }
}

export function toGatewayError(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error;
  const mapped = fromFastifyError(error as FastifyError);
  if (mapped !== undefined) return mapped;
  // Any other client error Fastify raises: its message may quote the request, so it is not echoed.
  const statusCode = (error as { statusCode?: unknown }).statusCode;
  if (typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500) {
    return gatewayError('request_malformed', { cause: error });
  }
  return gatewayError('internal_error', { cause: error });
}

// The code each error answer carried, for the request's log line (src/gateway/request-observer.ts).
const answeredCodes = new WeakMap<FastifyReply, ErrorCode>();

/** The error code the gateway answered this request with, if it answered with an error. */
export function answeredErrorCode(reply: FastifyReply): ErrorCode | undefined {
  return answeredCodes.get(reply);
}

function sendGatewayError(reply: FastifyReply, error: GatewayError): FastifyReply {
  answeredCodes.set(reply, error.code);
  return reply
    .code(error.status)
    .headers(error.headers)
    .type('application/json')
    .send(
      errorEnvelope(error.status, {
        code: error.code,
        type: error.type,
        message: error.message,
        ...(error.param === undefined ? {} : { param: error.param }),
        ...(error.details === undefined ? {} : { details: error.details }),
      }),
    );
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const gatewayFailure = toGatewayError(error);
    if (gatewayFailure.code === 'internal_error') {
      // Only the error's own message and stack: request data (and so any credential) stays out of logs.
      request.log.error({ err: error }, 'unhandled error');
    }
    return sendGatewayError(reply, gatewayFailure);
  });
  app.setNotFoundHandler((request, reply) =>
    sendGatewayError(reply, unroutedRequestError(request.method, request.raw.url ?? '')),
  );
}

const NEAR_MISS_ERRORS = {
  id_not_uuid: 'route_id_not_uuid',
  query_string: 'route_query_string',
  trailing_slash: 'route_trailing_slash',
} as const;

/** 404 route_not_found for a raw target, its message naming the mistake when it is a near miss. */
export function routeNotFound(target: string): GatewayError {
  const nearMiss = nearMissOf(target);
  return gatewayError(nearMiss === undefined ? 'route_not_found' : NEAR_MISS_ERRORS[nearMiss]);
}

// Methods named in a 405's message; any other token the client chose is not echoed.
const KNOWN_METHODS = new Set(METHODS);

/**
 * The answer to a request no route took: 405 with `Allow` when its target is exactly a path of the table
 * (whatever the method: TRACE, PROPFIND, a token no server knows), 404 route_not_found otherwise.
 */
export function unroutedRequestError(method: string, target: string): GatewayError {
  const allowed = allowedMethodsAt(target);
  if (allowed === undefined) return routeNotFound(target);
  const allow = allowed.join(', ');
  const named = KNOWN_METHODS.has(method) ? method : undefined;
  return gatewayError('method_not_allowed', { method: named, allow }, { headers: { allow } });
}

/**
 * Fastify answers a malformed percent-encoding or an over-long path parameter before routing, outside
 * the error handler; such a target names no route, so it gets the same 404 as any unknown path.
 */
export function answerFrameworkError(_error: unknown, request: FastifyRequest, reply: FastifyReply): void {
  sendGatewayError(reply.header('x-request-id', request.id), routeNotFound(request.raw.url ?? ''));
}
