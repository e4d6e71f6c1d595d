// Answers what Node's HTTP server handles before Fastify sees a request (malformed HTTP, headers too
// large, a client too slow, a CONNECT), in the envelope with an X-Request-Id like every other answer
// (docs/security.md, "At the HTTP edge"). It replaces Fastify's default handler, which logs the parser's
// error at trace with its `rawPacket`: the bytes the client sent, an Authorization header included. The log
// line here carries Node's error code and the answer's status and id, nothing the client sent.
import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import {
  answeredRaw,
  isLeftUnanswered,
  isRefusedConnection,
  refuseConnection,
} from './refused-connections.ts';
import { errorEnvelope } from '../maxai/envelope.ts';
import type { RequestIds } from './client-request-id.ts';
import { unroutedRequestError } from './error-handler.ts';
import { gatewayError, type GatewayError } from './registry.ts';

/** Node's parser and server errors are named by codes of capitals, digits and `_`; anything else is not logged. */
const NODE_ERROR_CODE = /^[A-Z][A-Z0-9_]{0,63}$/;
// A request line whose method llhttp does not know (RFC 9110 token, then origin-form target, then version).
const REQUEST_LINE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+ (\/[!-~]*) HTTP\/1\.[01]$/;

interface ParserError extends NodeJS.ErrnoException {
  /** The bytes being parsed when the error occurred (a Buffer), and how far the parser got in them. */
  rawPacket?: unknown;
  bytesParsed?: number;
}

const MALFORMED = (): GatewayError => gatewayError('request_not_http');

/**
 * llhttp refuses a method it does not know (an unknown token, `get` in lower case) before any request
 * exists, yet on a known path gengate's answer is 405 (docs/security.md) with `Allow`, as for TRACE or
 * PROPFIND. The method is the first token of its line, so the line starts after the last line end before the
 * point of failure; when the whole line is not in the packet, or is not a request line, the answer is 400.
 */
function unknownMethodAnswer(error: ParserError): GatewayError {
  const { rawPacket, bytesParsed } = error;
  if (!Buffer.isBuffer(rawPacket) || bytesParsed === undefined) return MALFORMED();
  // (A negative offset would search from the end: a failure at the first byte starts the line there.)
  const lineStart = bytesParsed === 0 ? 0 : rawPacket.lastIndexOf(0x0a, bytesParsed - 1) + 1;
  const lineEnd = rawPacket.indexOf('\r\n', lineStart);
  if (lineEnd === -1) return MALFORMED();
  const target = REQUEST_LINE.exec(rawPacket.toString('latin1', lineStart, lineEnd))?.[1];
  return target === undefined ? MALFORMED() : unroutedRequestError('', target);
}

function answerFor(error: ParserError): GatewayError {
  switch (error.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return gatewayError('request_timeout');
    case 'HPE_HEADER_OVERFLOW':
      return gatewayError('request_headers_too_large');
    case 'HPE_INVALID_METHOD':
      return unknownMethodAnswer(error);
    default:
      return MALFORMED();
  }
}

/**
 * `answer` as a whole HTTP/1.1 response for a raw connection, which closes after it. Private and not to be
 * stored, as every answer to a request that may carry a tenant key.
 */
export function rawAnswer(answer: GatewayError, reqId: string): string {
  const body = JSON.stringify(errorEnvelope(answer.status, answer));
  const extraHeaders = Object.entries(answer.headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return (
    `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? ''}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    `X-Request-Id: ${reqId}\r\nCache-Control: private, no-store\r\nVary: Authorization\r\n` +
    `${extraHeaders}Connection: close\r\n\r\n${body}`
  );
}

/** Writes `answer` as a whole HTTP/1.1 response on a raw connection, then closes it. */
function answerAndClose(socket: Duplex, answer: GatewayError, reqId: string): void {
  if (socket.writable) socket.write(rawAnswer(answer, reqId));
  socket.destroy();
}

/** The response Node is sending on `socket` (its own `socketOnError` reads the same field). */
function responseInFlight(socket: Duplex): ServerResponse | undefined {
  return (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined;
}

/**
 * Runs `answer` once the responses to the requests received whole before the broken bytes are sent,
 * in order, so a client never reads the refusal as the answer to an earlier request. A response whose
 * request is still arriving (the one that timed out, or whose body broke) is not waited for, nor one to a
 * request that arrived after the refusal (src/gateway/request-head.ts leaves those unanswered).
 */
function afterCompleteRequestsAnswered(socket: Duplex, answer: () => void): void {
  const response = responseInFlight(socket);
  if (response === undefined || !response.req.complete || isLeftUnanswered(response)) {
    answer();
    return;
  }
  response.once('finish', () => {
    afterCompleteRequestsAnswered(socket, answer);
  });
}

/**
 * The refused request's id: the client's when it offered a sane one and its head can be read (parsed
 * already, for a request refused in its body or too slow with it; else from the bytes the parser refused).
 */
function refusedRequestId(
  error: ParserError,
  refusedMidway: ServerResponse | undefined,
  requestIds: RequestIds,
): string {
  if (refusedMidway !== undefined) return requestIds.forRequest(refusedMidway.req);
  const { rawPacket, bytesParsed } = error;
  const offered =
    Buffer.isBuffer(rawPacket) && bytesParsed !== undefined
      ? requestIds.inRawHead(rawPacket, bytesParsed)
      : undefined;
  return offered ?? randomUUID();
}

/** Counts an answer given here to no request Fastify knows: its status. */
export type CountAnswer = (status: number) => void;

export interface ClientErrorHandlerOptions {
  logger: FastifyBaseLogger;
  countAnswer: CountAnswer;
  /** The ids of the answers, as the server gives its requests theirs. */
  requestIds: RequestIds;
}

/** Fastify's `clientErrorHandler`: answers, logs and counts what Node's parser refuses. */
export function createClientErrorHandler({ logger, countAnswer, requestIds }: ClientErrorHandlerOptions) {
  return function answerClientError(error: ParserError, socket: Duplex): void {
    // A reset or an already closed socket has nobody left to answer (as Fastify's default handler). A
    // connection already refused has its answer: a parser that failed fails again on every packet that
    // still arrives, and the bytes after a refused head are no request.
    if (error.code === 'ECONNRESET' || socket.destroyed || isRefusedConnection(socket)) return;
    // While the refusal waits for earlier responses, a request that completes after a timeout is not served.
    refuseConnection(socket);
    const answer = answerFor(error);
    // The request Fastify is serving, when the refusal came while it still arrived (its body broke, or
    // was too slow).
    const inFlight = responseInFlight(socket);
    const refusedMidway = inFlight !== undefined && !inFlight.req.complete ? inFlight : undefined;
    const reqId = refusedRequestId(error, refusedMidway, requestIds);
    logger.info(
      {
        reqId,
        clientAddress: (socket as Duplex & { remoteAddress?: string }).remoteAddress,
        status: answer.status,
        errorCode: error.code !== undefined && NODE_ERROR_CODE.test(error.code) ? error.code : undefined,
      },
      'client error',
    );
    afterCompleteRequestsAnswered(socket, () => {
      // A connection already closing (its last response said so) is left to close: nothing more is sent.
      if (socket.writableEnded) return;
      // A request Fastify is serving (refused in its body, or too slow with it) is observed as its own,
      // with its route and tenant, when its connection closes (src/gateway/request-observer.ts).
      if (refusedMidway === undefined) countAnswer(answer.status);
      else answeredRaw(refusedMidway, answer.status);
      answerAndClose(socket, answer, reqId);
    });
  };
}

/**
 * Node hands a CONNECT to the server's 'connect' listeners, never to Fastify, and without one drops the
 * connection unanswered; gengate answers it like any other method no route takes (405 or 404).
 */
export function answerConnectRequests(
  server: Server,
  logger: FastifyBaseLogger,
  countAnswer: CountAnswer,
): void {
  server.on('connect', (request: IncomingMessage, socket: Duplex) => {
    const answer = unroutedRequestError(request.method ?? '', request.url ?? '');
    const reqId = randomUUID();
    countAnswer(answer.status);
    logger.info({ reqId, status: answer.status, method: 'CONNECT' }, 'client error');
    answerAndClose(socket, answer, reqId);
  });
}
