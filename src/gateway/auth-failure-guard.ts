// Slows key guessing: once a client address has failed authentication `limit` times within a window,
// its further failures get 429 with Retry-After instead of 401 until the window ends, telling a
// misconfigured client or a guesser to back off. A valid key is never refused here: behind a shared
// address (an ingress, a NAT) one bad client must not lock every tenant out. Counting is done by
// @fastify/rate-limit, per replica, keyed by the client address Fastify derives (see server.trustProxy).
// Tenants' own rate-limit headers are untouched: this guard answers only unauthenticated requests.
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { gatewayError } from '../errors/registry.ts';

export interface AuthFailureGuardOptions {
  limit: number;
  windowSeconds: number;
}

export interface AuthFailureGuard {
  /** Counts one failed authentication for the caller's address; throws 429 past the limit. */
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
    async recordFailure(request) {
      const state = await checker()(request);
      if (!state.isAllowed && state.isExceeded) {
        const retryAfter = Math.max(1, state.ttlInSeconds);
        throw gatewayError(
          'too_many_authentication_failures',
          { retryAfterSeconds: retryAfter },
          { headers: { 'retry-after': String(retryAfter) } },
        );
      }
    },
  };
}
