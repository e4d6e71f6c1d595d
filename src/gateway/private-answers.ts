// Every answer of the gateway is private to the caller it was made for: polls, usage, keys, replays and
// errors alike. A shared cache in front of gengate must never store one and serve it to another tenant
// (which would step around the 404 of another tenant's request id), whatever the upstream said about
// caching: its own cache directives and validators are never passed on (src/upstream/headers.ts).
// `no-store` forbids keeping the answer at all; `private` tells a cache that ignores no-store it is not
// shared; `Vary: Authorization` keys anything that still caches on the caller's credential.
// `X-Content-Type-Options: nosniff` keeps a browser from reading an answer (which may echo a short
// client-written name) as anything but the JSON it is declared to be.
import type { DoneFuncWithErrOrRes, FastifyReply, FastifyRequest } from 'fastify';

const PRIVATE_HEADERS = {
  'cache-control': 'private, no-store',
  vary: 'Authorization',
  'x-content-type-options': 'nosniff',
} as const;

/** onSend, app-wide: set last, over anything set before. */
export function markAnswerPrivate(
  _request: FastifyRequest,
  reply: FastifyReply,
  payload: unknown,
  done: DoneFuncWithErrOrRes,
): void {
  reply.headers(PRIVATE_HEADERS);
  done(null, payload);
}
