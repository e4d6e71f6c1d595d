// The steps of a gateway route that need the app's parts: authentication, forwarding, the limits shown
// on a refusal and the count of served requests. src/gateway/pipeline.ts registers them in order.
import type { DoneFuncWithErrOrRes, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { ExpiredKey, presentedKeyPrefix, type TenantDirectory } from '../auth/tenant-directory.ts';
import type { JobBook } from '../jobs/book.ts';
import type { Prices } from '../usage/pricing.ts';
import { GatewayError, type ErrorCode } from '../errors/registry.ts';
import { upstreamPath, type GatewayRoute } from '../routing/route-table.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import type { RateLimiter } from '../ratelimit/types.ts';
import { failedBeforeSending, type UpstreamClient, type UpstreamResponse } from '../upstream/client.ts';
import { judgeUpstreamAnswer } from '../upstream/answer.ts';
import type { CredentialHealth } from '../upstream/credential-health.ts';
import { headersForUpstream } from '../upstream/headers.ts';
import type { UsageMeter } from '../usage/meter.ts';
import { recordExchangeUsage } from '../usage/record.ts';
import { createAccountHandler } from './account.ts';
import type { AuthFailureGuard } from './auth-failure-guard.ts';
import {
  applicableLimits,
  limitHeadersOrRefusal,
  limitLogFields,
  peekTenantLimits,
} from '../ratelimit/tenant-limits.ts';
import { bodyOf, requestIdParam, routeOf, tenantOf } from './request-state.ts';

export interface CredentialSource {
  get(name: string): string;
}

export interface RouteStepsOptions {
  tenants: () => TenantDirectory;
  credentials: CredentialSource;
  upstream: UpstreamClient;
  /** Budgets and jobs in flight, for account.usage. */
  jobs: JobBook;
  usage: UsageMeter;
  /** The prices admission reserves with: usage estimates a create's cost with the same. */
  prices: Prices;
  limiter: RateLimiter;
  authFailures: AuthFailureGuard;
  metrics: GatewayMetrics;
  credentialHealth: CredentialHealth;
  now: () => number;
}

// Refusals that already carry the limiter's own headers (a cost beyond every capacity is decided without
// the store, so its 403 gets the standing headers like any other refusal).
const LIMITER_REFUSALS = new Set<ErrorCode>(['rate_limited', 'store_unavailable']);

export function addDeprecationHeaders(route: GatewayRoute) {
  const link = `<${route.successorPath ?? route.path}>; rel="successor-version"`;
  return (_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: DoneFuncWithErrOrRes) => {
    reply.header('deprecation', 'true').header('link', link);
    done(null, payload);
  };
}

export function createRouteSteps(options: RouteStepsOptions) {
  // Hooks that await nothing take `done` instead of being async, here and in every plugin of the app:
  // an async hook costs every request a promise and two microtasks (docs/architecture.md, "Hooks").
  const authenticate = (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    try {
      request.gateway.caller = options.tenants().authenticate(request.headers.authorization, options.now());
    } catch (error) {
      // A wrong or expired key is a guess and counts; a missing one is not. Past the address's limit,
      // recordFailure answers 429 in place of the 401.
      if (error instanceof GatewayError && error.code !== 'missing_api_key') {
        const prefix = presentedKeyPrefix(request.headers.authorization);
        if (prefix !== undefined) {
          const tenantId = error.cause instanceof ExpiredKey ? error.cause.tenantId : undefined;
          request.gateway.refusedKey = { prefix, tenantId };
        }
        options.authFailures.recordFailure(request).then(() => {
          done(error);
        }, done);
        return;
      }
      throw error;
    }
    done();
  };

  async function forward(request: FastifyRequest, reply: FastifyReply) {
    const route = routeOf(request);
    const tenant = tenantOf(request);
    const jsonBody = route.method === 'POST' ? bodyOf(request) : undefined;
    const body = jsonBody?.raw;
    const token = options.credentials.get(tenant.credential);
    const started = performance.now();
    let response: UpstreamResponse;
    request.gateway.sentUpstream = true;
    try {
      response = await options.upstream.send({
        method: route.method,
        path: upstreamPath(route, requestIdParam(request)),
        headers: headersForUpstream(token, request.id, body),
        ...(body === undefined ? {} : { body }),
        tenant: tenant.id,
      });
    } catch (error) {
      if (failedBeforeSending(error)) request.gateway.sentUpstream = false;
      throw error;
    } finally {
      request.gateway.upstreamMs = performance.now() - started;
    }
    request.gateway.upstreamStatus = response.status;
    const verdict = judgeUpstreamAnswer(route.id, requestIdParam(request), response);
    switch (verdict.kind) {
      case 'rate_limited':
        throw verdict.error;
      case 'credential_rejected':
        options.credentialHealth.rejected(tenant.credential);
        request.log.error(
          { credential: tenant.credential, upstreamStatus: verdict.status },
          'the upstream refused the credential; see the runbook of GengateUpstreamCredentialRejected',
        );
        throw verdict.error;
      case 'invalid':
        // Never passed on, stored for a replay or metered; the claim of a 2xx create stays pending, since
        // the upstream may have taken the submission (create-outcome.ts).
        request.log.warn(
          { received: verdict.received },
          'the upstream sent an answer gengate does not pass on',
        );
        throw verdict.error;
      case 'pass':
        options.credentialHealth.accepted(tenant.credential);
        break;
    }
    if (verdict.status < 300) {
      recordExchangeUsage(
        options.usage,
        options.metrics,
        options.prices,
        {
          tenantId: tenant.id,
          route: route.id,
          requestBody: jsonBody?.value,
          responseBody: response.body,
        },
        options.now(),
      );
    }
    return reply.code(verdict.status).headers(verdict.headers).send(response.body);
  }

  // An authenticated request refused before its charge still shows its limits (docs/rate-limits.md);
  // refusals by the limiter carry their own headers, and a charged request already has them.
  async function showLimitsOnRefusal(request: FastifyRequest, reply: FastifyReply, error: Error) {
    const { caller, body } = request.gateway;
    if (caller === undefined || reply.hasHeader('ratelimit-policy')) return;
    if (error instanceof GatewayError && LIMITER_REFUSALS.has(error.code)) return;
    const route = routeOf(request);
    reply.headers(await peekTenantLimits(options.limiter, caller.tenant, route.id, body?.value));
  }

  const answerAccountLocally = createAccountHandler(options.usage, options.jobs, options.now);
  // The account routes answer from the gateway's own meter for `account: gateway` tenants.
  const answerAccountOrForward = (request: FastifyRequest, reply: FastifyReply) =>
    request.gateway.caller?.tenant.account === 'gateway'
      ? answerAccountLocally(request, reply)
      : forward(request, reply);
  const handlerFor = (route: GatewayRoute) =>
    route.id === 'account.usage' || route.id === 'account.keys' ? answerAccountOrForward : forward;
  function countServedRequest(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) {
    const { caller } = request.gateway;
    if (caller !== undefined && reply.statusCode < 300) {
      options.usage.record(caller.tenant.id, { kind: 'request', route: routeOf(request).id }, options.now());
    }
    done();
  }

  /**
   * gengate's own routes (the webhook deliveries): charged against the tenant's limits like every route,
   * with nothing else to admit (no request id, no job).
   */
  async function chargeLimits(request: FastifyRequest, reply: FastifyReply) {
    const tenant = tenantOf(request);
    const limits = applicableLimits(tenant, routeOf(request).id, undefined);
    // No limit applies: nothing is decided, so the log line names no decision (as on every route).
    if (limits.length === 0) return;
    const decision = await options.limiter.check(tenant.id, limits);
    request.gateway.rateLimit = limitLogFields(decision);
    reply.headers(limitHeadersOrRefusal(decision));
  }

  return { authenticate, handlerFor, showLimitsOnRefusal, chargeLimits, countServedRequest };
}
