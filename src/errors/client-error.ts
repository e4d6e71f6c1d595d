// Answers what Node's HTTP parser refuses before Fastify sees a request (malformed HTTP, headers too
// large, a client too slow), in the envelope with an X-Request-Id like every other answer (contract
// section 9). It replaces Fastify's default handler, which logs the parser's error at trace with its
// `rawPacket`: the bytes the client sent, an Authorization header included. The log line here carries
// Node's error code and the answer's status and id, nothing the client sent.
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { errorEnvelope } from '../maxai/envelope.ts';
import { gatewayError, type GatewayError } from './registry.ts';

/** Node's parser and server errors are named by codes of capitals, digits and `_`; anything else is not logged. */
const NODE_ERROR_CODE = /^[A-Z][A-Z0-9_]{0,63}$/;

function answerFor(code: string | undefined): GatewayError {
  switch (code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return gatewayError('request_timeout', 'the request was not received in time');
    case 'HPE_HEADER_OVERFLOW':
      return gatewayError(
        'request_headers_too_large',
        'the request headers are larger than this gateway accepts',
      );
    default:
      return gatewayError('bad_request', 'the request is not valid HTTP');
  }
}

/** Fastify's `clientErrorHandler` for a server whose lines go to `logger`. */
export function createClientErrorHandler(logger: FastifyBaseLogger) {
  return function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
    // A reset or an already closed socket has nobody left to answer (as Fastify's default handler).
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const answer = answerFor(error.code);
    const reqId = randomUUID();
    logger.info(
      {
        reqId,
        status: answer.status,
        errorCode: error.code !== undefined && NODE_ERROR_CODE.test(error.code) ? error.code : undefined,
      },
      'client error',
    );
    if (socket.writable) {
      const body = JSON.stringify(errorEnvelope(answer.status, answer));
      socket.write(
        `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? ''}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
          `X-Request-Id: ${reqId}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy();
  };
}
