// Admission of a request's head, before routing and authentication read it (docs/security.md, "At the HTTP
// edge").
//
// Node's parser (llhttp, kept strict by src/gateway/server-options.ts) refuses most ambiguous framing
// itself, and src/errors/client-error.ts answers it: Transfer-Encoding with Content-Length, several or
// malformed Content-Length values, a Transfer-Encoding whose last coding is not chunked, a malformed
// chunk, obs-fold, a bare CR or LF. What it lets through is refused here, with the reasons in
// docs/security.md:
// - Transfer-Encoding on HTTP/1.0 (RFC 9112 section 6.1: the framing is faulty; llhttp reads the chunks
//   and, on a kept-alive connection, serves the bytes after them as a second request);
// - any Transfer-Encoding but exactly `chunked` (llhttp reads `gzip, chunked` as plain chunks without
//   decoding gzip, so a proxy that does decode it reads another body);
// - a version other than HTTP/1.0 and HTTP/1.1 (llhttp parses an HTTP/0.9 request line);
// - no Host on HTTP/1.1, or more than one Host (RFC 9112 section 3.2);
// and, because Node keeps the first of several and drops the others, where a proxy may keep another:
// - more than one Authorization field (never served as any tenant) or Content-Type field.
// A request line no route takes is answered here too (405 or 404), before Fastify would parse a body for
// its 404 handler and answer 415, or 400 for a QUERY without Content-Type, first.
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { IncomingMessage } from 'node:http';
import { unroutedRequestError } from '../errors/error-handler.ts';
import { gatewayError, type GatewayError } from '../errors/registry.ts';
import { isRefusedConnection, leaveUnanswered, refuseConnection } from '../errors/refused-connections.ts';

const CHUNKED_ONLY = /^chunked$/i;

type FaultyMessageError =
  | 'http_version_not_served'
  | 'transfer_encoding_in_http10'
  | 'transfer_encoding_not_chunked'
  | 'host_field_not_single';

/** A message whose framing cannot be trusted: 400, and its connection closes after the answer. */
function faultyMessage(name: FaultyMessageError): GatewayError {
  return gatewayError(name, { headers: { connection: 'close' } });
}

/** How many Host, Authorization and Content-Type fields the client sent (Node keeps only the first). */
function singletonFieldCounts(rawHeaders: readonly string[]) {
  const counts = { host: 0, authorization: 0, contentType: 0 };
  for (let index = 0; index < rawHeaders.length; index += 2) {
    switch ((rawHeaders[index] ?? '').toLowerCase()) {
      case 'host':
        counts.host += 1;
        break;
      case 'authorization':
        counts.authorization += 1;
        break;
      case 'content-type':
        counts.contentType += 1;
        break;
    }
  }
  return counts;
}

/** Why the head of `request` is refused, or undefined when it is sound. */
function requestHeadProblem(request: IncomingMessage): GatewayError | undefined {
  if (request.httpVersionMajor !== 1 || request.httpVersionMinor > 1) {
    return faultyMessage('http_version_not_served');
  }
  const transferEncoding = request.headers['transfer-encoding'];
  if (transferEncoding !== undefined) {
    if (request.httpVersionMinor === 0) {
      return faultyMessage('transfer_encoding_in_http10');
    }
    if (!CHUNKED_ONLY.test(transferEncoding.trim())) {
      return faultyMessage('transfer_encoding_not_chunked');
    }
  }
  const counts = singletonFieldCounts(request.rawHeaders);
  if (counts.host > 1 || (counts.host === 0 && request.httpVersionMinor === 1)) {
    return faultyMessage('host_field_not_single');
  }
  if (counts.authorization > 1) {
    return gatewayError('field_repeated', { field: 'Authorization' });
  }
  if (counts.contentType > 1) {
    return gatewayError('field_repeated', { field: 'Content-Type' });
  }
  return undefined;
}

/**
 * Refuses a faulty head (see above) and, once a message's framing is refused, everything after it on
 * its connection: Node parses and hands over pipelined requests before the refusal is even written, so
 * each one that follows is dropped unanswered and never routed; the connection closes once the refusal
 * is sent. An app-wide onRequest hook after the ones that observe every request
 * (src/gateway/pipeline.ts), and itself synchronous, so the connection is marked before Node parses the
 * next message of the same bytes.
 */
export function admitRequestHead(
  request: FastifyRequest,
  reply: FastifyReply,
  done: HookHandlerDoneFunction,
): void {
  const socket = request.raw.socket;
  if (isRefusedConnection(socket)) {
    // No answer: the connection closes after the refusal, and Node then ends this response.
    reply.hijack();
    leaveUnanswered(reply.raw);
    done();
    return;
  }
  const problem = requestHeadProblem(request.raw);
  if (problem?.headers.connection === 'close') refuseConnection(socket);
  done(problem ?? (request.is404 ? unroutedRequestError(request.method, request.raw.url ?? '') : undefined));
}
