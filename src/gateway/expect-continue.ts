// `Expect` (RFC 9110 section 10.1.1). Node answers `Expect: 100-continue` with 100 Continue before any
// hook runs, so a client with a wrong key was invited to send a body only to be refused, and it answers
// any other expectation with a bare 417 of its own (no envelope, no X-Request-Id, no log line, no count).
// Both now go through the pipeline like any request: another expectation is refused by the request head
// (src/gateway/request-head.ts, 417 expectation_failed), and 100 Continue is sent only once the request
// is known to be allowed as far as can be judged without its body: its head and route, its key, the
// tenant's policy for the route (video generation off), its limits' room for the smallest request the
// route can make, its media type and declared size. A request refused before that gets the refusal, and
// its body is never asked for. The judgments that need the body (the schema, the policy's per-field
// rules, the request id, the limits' charge of its real cost) follow it.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { PolicyRoute } from '../policy/outcome.ts';
import { routeRejection } from '../policy/rules.ts';
import type { RateLimiter } from '../ratelimit/types.ts';
import { assertRoomBeforeBody } from '../ratelimit/tenant-limits.ts';
import { policyViolation } from './policy-hook.ts';
import { routeOf, tenantOf } from './request-state.ts';

/** Hands requests that carry an expectation to the app instead of letting Node answer them. */
export function handExpectationsToTheApp(server: Server): void {
  const serve = (request: IncomingMessage, response: ServerResponse) =>
    server.emit('request', request, response);
  server.on('checkContinue', serve);
  server.on('checkExpectation', serve);
}

function expectsContinue(request: IncomingMessage): boolean {
  // HTTP/1.0 has no 1xx answers (RFC 9110 section 15.2).
  return request.headers.expect !== undefined && request.httpVersionMinor === 1;
}

/**
 * The body, as Fastify reads it, that asks the client for it (100 Continue) on its first read: after
 * Fastify has found a parser for its media type and its declared length within the limit, when it
 * starts reading. `receivedEncodedLength` is what Fastify compares with Content-Length.
 */
class BodyOnContinue extends Readable {
  receivedEncodedLength = 0;
  readonly #raw: IncomingMessage;
  readonly #response: ServerResponse;
  #asked = false;

  constructor(raw: IncomingMessage, response: ServerResponse) {
    super();
    this.#raw = raw;
    this.#response = response;
  }

  override _read(): void {
    if (!this.#asked) {
      this.#asked = true;
      this.#response.writeContinue();
      this.#raw.on('data', (chunk: Buffer) => {
        this.receivedEncodedLength += chunk.length;
        if (!this.push(chunk)) this.#raw.pause();
      });
      this.#raw.once('end', () => this.push(null));
      this.#raw.once('error', (error) => this.destroy(error));
    }
    this.#raw.resume();
  }
}

/** The preParsing step of the create routes: refuses what can be refused without the body, then asks for it. */
export function createContinueGate(limiter: RateLimiter) {
  return function continueWhenAllowed(
    request: FastifyRequest,
    reply: FastifyReply,
    payload: Readable,
    done: (error: Error | null, payload?: Readable) => void,
  ): void {
    if (!expectsContinue(request.raw)) {
      done(null, payload);
      return;
    }
    const route = routeOf(request).id;
    const tenant = tenantOf(request);
    if (route !== 'images.create' && route !== 'videos.create') throw new Error('a body on a read route');
    const rejection = routeRejection(tenant.policy, route satisfies PolicyRoute);
    if (rejection !== undefined) throw policyViolation(rejection);
    assertRoomBeforeBody(limiter, tenant, route).then(() => {
      done(null, new BodyOnContinue(request.raw, reply.raw));
    }, done);
  };
}
