// The gateway's routes: one Fastify route per row of the allowlist, each guarded by the same hooks
// (exact request target, then authentication) before anything is parsed or forwarded.
import type {
  DoneFuncWithErrOrRes,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
} from 'fastify';
import type { AuthFailureGuard } from '../auth/failure-guard.ts';
import type { TenantDirectory } from '../auth/tenant-directory.ts';
import { GatewayError, gatewayError, type ErrorCode } from '../errors/registry.ts';
import { GATEWAY_ROUTES, upstreamPath, type GatewayRoute } from '../routing/route-table.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import { createOwnershipHooks } from './ownership-hooks.ts';
import type { OwnershipStore } from '../ownership/store.ts';
import type { Admission } from '../admission/admission.ts';
import { createPolicyHook } from './policy-hook.ts';
import type { RateLimiter } from '../ratelimit/types.ts';
import type { UpstreamClient, UpstreamResponse } from '../upstream/client.ts';
import { headersForClient, headersForUpstream, retryAfterSeconds } from '../upstream/headers.ts';
import { parsedJsonBody } from '../validation/json-body.ts';
import { validateRequestBody } from './validate-request.ts';
import type { UsageMeter } from '../usage/meter.ts';
import { recordExchangeUsage } from '../usage/record.ts';
import { createAccountHandler } from './account.ts';
import { gatewayRouteOf, requestIdParam } from './request-context.ts';
import { admitRequestTarget } from './request-target.ts';
import { createAdmitHook } from './admit.ts';
import { peekTenantLimits } from './limits.ts';

export interface CredentialSource {
  get(name: string): string;
}

export interface GatewayRoutesOptions {
  tenants: () => TenantDirectory;
  credentials: CredentialSource;
  upstream: UpstreamClient;
  usage: UsageMeter;
  limiter: RateLimiter;
  ownership: OwnershipStore;
  admission: Admission;
  authFailures: AuthFailureGuard;
  metrics: GatewayMetrics;
  now: () => number;
}

// Refusals that already carry the limiter's own headers (a cost beyond every capacity is decided without
// the store, so its 403 gets the standing headers like any other refusal).
const LIMITER_REFUSALS = new Set<ErrorCode>(['rate_limited', 'store_unavailable']);

function addDeprecationHeaders(route: GatewayRoute) {
  const link = `<${route.successorPath ?? route.path}>; rel="successor-version"`;
  return (_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: DoneFuncWithErrOrRes) => {
    reply.header('deprecation', 'true').header('link', link);
    done(null, payload);
  };
}

export function registerGatewayRoutes(app: FastifyInstance, options: GatewayRoutesOptions): void {
  // Hooks that await nothing take `done` instead of being async, here and in every plugin of the app:
  // an async hook costs every request a promise and two microtasks (docs/architecture.md, "Hooks").
  const authenticate = (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    try {
      request.caller = options.tenants().authenticate(request.headers.authorization, options.now());
    } catch (error) {
      // A wrong or expired key is a guess and counts; a missing one is not. Past the address's limit,
      // recordFailure answers 429 in place of the 401.
      if (error instanceof GatewayError && error.code !== 'missing_api_key') {
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
    const route = gatewayRouteOf(request);
    const caller = request.caller;
    if (caller === undefined) throw new Error('forward called before authentication');
    const jsonBody = route.method === 'POST' ? parsedJsonBody(request) : undefined;
    const body = jsonBody?.raw;
    const token = options.credentials.get(caller.tenant.credential);
    const started = performance.now();
    let response: UpstreamResponse;
    try {
      response = await options.upstream.send({
        method: route.method,
        path: upstreamPath(route, requestIdParam(request)),
        headers: headersForUpstream(token, request.id, body),
        ...(body === undefined ? {} : { body }),
      });
    } finally {
      request.upstreamMs = performance.now() - started;
    }
    request.upstreamStatus = response.status;
    if (response.status === 429) {
      const retryAfter = retryAfterSeconds(response.headers);
      throw gatewayError('upstream_rate_limited', 'the generation service is rate limiting this gateway', {
        ...(retryAfter === undefined ? {} : { headers: { 'retry-after': String(retryAfter) } }),
      });
    }
    if (response.status < 300) {
      recordExchangeUsage(
        options.usage,
        options.metrics,
        {
          tenantId: caller.tenant.id,
          route: route.id,
          requestBody: jsonBody?.value,
          responseBody: response.body,
        },
        options.now(),
      );
    }
    return reply.code(response.status).headers(headersForClient(response.headers)).send(response.body);
  }

  // An authenticated request refused before its charge still shows its limits (contract section 8);
  // refusals by the limiter carry their own headers, and a charged request already has them.
  async function showLimitsOnRefusal(request: FastifyRequest, reply: FastifyReply, error: Error) {
    if (request.caller === undefined || reply.hasHeader('ratelimit-policy')) return;
    if (error instanceof GatewayError && LIMITER_REFUSALS.has(error.code)) return;
    const route = gatewayRouteOf(request);
    const body =
      route.method === 'POST' && request.body !== undefined ? parsedJsonBody(request).value : undefined;
    reply.headers(await peekTenantLimits(options.limiter, request.caller.tenant, route.id, body));
  }

  const enforcePolicy = createPolicyHook(options.metrics);
  const ownership = createOwnershipHooks({ store: options.ownership, limiter: options.limiter });
  // A create is validated and judged by the tenant's policy before admission claims its requestId and
  // charges it; a request id is checked for ownership by the same admission. Refused requests consume
  // nothing.
  const admit = createAdmitHook({
    admission: options.admission,
    answerTakenRequestId: ownership.answerTakenRequestId,
  });
  const preHandlerFor = (route: GatewayRoute) => (route.method === 'POST' ? [enforcePolicy, admit] : [admit]);
  const answerAccountLocally = createAccountHandler(options.usage, options.now);
  function countServedRequest(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) {
    if (request.caller !== undefined && reply.statusCode < 300) {
      options.usage.record(
        request.caller.tenant.id,
        { kind: 'request', route: gatewayRouteOf(request).id },
        options.now(),
      );
    }
    done();
  }

  for (const route of GATEWAY_ROUTES) {
    const isAccountRoute = route.id === 'account.usage' || route.id === 'account.keys';
    app.route({
      method: route.method,
      url: route.path,
      config: { gatewayRoute: route },
      onRequest: [admitRequestTarget, authenticate],
      ...(route.method === 'POST' ? { preValidation: validateRequestBody } : {}),
      preHandler: preHandlerFor(route),
      onError: showLimitsOnRefusal,
      onResponse: countServedRequest,
      onSend: [
        ...(route.method === 'POST' ? [ownership.settleClaim] : []),
        ...(route.successorPath === undefined ? [] : [addDeprecationHeaders(route)]),
      ],
      handler: isAccountRoute
        ? (request, reply) =>
            request.caller?.tenant.account === 'gateway'
              ? answerAccountLocally(request, reply)
              : forward(request, reply)
        : forward,
    });
  }
}
