// Slows key guessing: a client address that fails authentication `limit` times within a window is
// refused outright (429, before any key is looked at) until the window ends. Counting is done by
// @fastify/rate-limit, per replica, keyed by the client address Fastify derives (see server.trustProxy).
// Tenants' own rate-limit headers are untouched: this guard answers before authentication and never
// sets them.
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { gatewayError } from '../errors/registry.ts';

export interface AuthFailureGuardOptions {
  limit: number;
  windowSeconds: number;
}

export interface AuthFailureGuard {
  /** Throws 429 when the caller's address has used up its failed attempts. */
  refuseIfBlocked(request: FastifyRequest): Promise<void>;
  /** Counts one failed authentication for the caller's address. */
  recordFailure(request: FastifyRequest): Promise<void>;
}

type CheckFailures = ReturnType<FastifyInstance['createRateLimit']>;

export function installAuthFailureGuard(
  app: FastifyInstance,
  options: AuthFailureGuardOptions,
): AuthFailureGuard {
  let checkFailures: CheckFailures | undefined;
  void app
    .register(rateLimit, {
      global: false,
      max: options.limit,
      timeWindow: options.windowSeconds * 1000,
      keyGenerator: (request) => request.ip,
      // The local store cannot fail; if it ever did, authentication itself still protects the routes.
      skipOnError: true,
    })
    .after(() => {
      checkFailures = app.createRateLimit();
    });

  function checker(): CheckFailures {
    if (checkFailures === undefined) throw new Error('authentication guard used before the app was ready');
    return checkFailures;
  }

  return {
    async refuseIfBlocked(request) {
      const state = await checker()(request, { increment: false });
      if (!state.isAllowed && state.remaining === 0) {
        const retryAfter = Math.max(1, state.ttlInSeconds);
        throw gatewayError(
          'too_many_authentication_failures',
          `too many failed authentications from this address; retry in ${retryAfter} s`,
          { headers: { 'retry-after': String(retryAfter) } },
        );
      }
    },
    async recordFailure(request) {
      await checker()(request);
    },
  };
}
