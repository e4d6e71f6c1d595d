// The gateway's request pipeline, top to bottom: every hook of the gateway is registered here, each a
// named function from its own module. Fastify runs a stage's app-wide hooks before the route's own, each
// in the order added, so a request meets the steps in this order:
//
//   step             function (module)                                    Fastify hook
//   context          installRequestContext (gateway/request-context.ts)   onRequest, app
//   overload         installLoadShedding (overload/shed-load.ts)          onRequest, app (under-pressure)
//   observe: start   installRequestObserver (gateway/request-observer.ts) onRequest, app
//   request head     installRequestHeadAdmission (gateway/request-head.ts) onRequest, app
//   target check     admitRequestTarget (gateway/request-target.ts)       onRequest, route
//   authentication   authenticate (gateway/routes.ts)                     onRequest, route
//   parse            installJsonBodyParser (validation/json-body.ts)      content-type parser
//   validate         validateRequestBody (gateway/validate-request.ts)    preValidation, POST routes
//   policy           enforcePolicy (gateway/policy-hook.ts)               preHandler, POST routes
//   admission        admit (gateway/admit.ts)                             preHandler, route
//   forward          handlerFor(route) (gateway/routes.ts)                handler
//   record: claim    settleClaim (gateway/ownership-hooks.ts)             onSend, POST routes
//   observe          the request observer, then the served-request count  onResponse, app then route
//                    (countServedRequest, gateway/routes.ts)
//
// On a refusal: installValidationFailureCounter (validation/failure-metrics.ts) and showLimitsOnRefusal
// (gateway/routes.ts) run as onError, then installErrorHandling (errors/error-handler.ts) writes the
// envelope. Draining (server/draining.ts) adds Connection: close in onSend while the server closes.
// Hooks that await nothing take Fastify's `done` callback (docs/architecture.md, "Hooks").
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { installAuthFailureGuard } from '../auth/failure-guard.ts';
import type { TenantDirectory } from '../auth/tenant-directory.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { answerConnectRequests } from '../errors/client-error.ts';
import { installErrorHandling } from '../errors/error-handler.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import { installLoadShedding } from '../overload/shed-load.ts';
import { GATEWAY_ROUTES } from '../routing/route-table.ts';
import { installDraining } from '../server/draining.ts';
import type { GatewayStore } from '../store/gateway-store.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import { installValidationFailureCounter } from '../validation/failure-metrics.ts';
import { installJsonBodyParser } from '../validation/json-body.ts';
import { createAdmitHook } from './admit.ts';
import { createOwnershipHooks } from './ownership-hooks.ts';
import { createPolicyHook } from './policy-hook.ts';
import { installRequestContext } from './request-context.ts';
import { installRequestHeadAdmission } from './request-head.ts';
import { installRequestObserver } from './request-observer.ts';
import { admitRequestTarget } from './request-target.ts';
import { addDeprecationHeaders, createRouteSteps, type CredentialSource } from './routes.ts';
import { validateRequestBody } from './validate-request.ts';

/** The parts the pipeline's steps use; tests pass their own. */
export interface GatewayParts {
  logger: FastifyBaseLogger;
  /** Read per request, so a configuration reload swaps tenants without a restart. */
  tenants: () => TenantDirectory;
  credentials: CredentialSource;
  metrics: GatewayMetrics;
  upstream: UpstreamClient;
  /** Rate limits, usage, request ownership and admission, opened and closed by the caller. */
  store: GatewayStore;
  now?: () => number;
}

export function installGatewayPipeline(
  app: FastifyInstance,
  config: GatewayConfig,
  parts: GatewayParts,
): void {
  installErrorHandling(app);
  answerConnectRequests(app.server, parts.logger);

  // App-wide, for every request (routed or not), in this order.
  installRequestContext(app);
  installDraining(app);
  installLoadShedding(app, config.server.overload, parts.metrics);
  installRequestObserver(app, parts.metrics, { logPrompts: config.logging.prompts });
  installRequestHeadAdmission(app);
  installJsonBodyParser(app, config.server.bodyLimitBytes);
  installValidationFailureCounter(app, parts.metrics);

  // Per route of the allowlist.
  const { authenticate, handlerFor, showLimitsOnRefusal, countServedRequest } = createRouteSteps({
    tenants: parts.tenants,
    credentials: parts.credentials,
    upstream: parts.upstream,
    usage: parts.store.usage,
    limiter: parts.store.limiter,
    authFailures: installAuthFailureGuard(app, config.server.authenticationFailures),
    metrics: parts.metrics,
    now: parts.now ?? Date.now,
  });
  const enforcePolicy = createPolicyHook(parts.metrics);
  const ownership = createOwnershipHooks({ store: parts.store.ownership, limiter: parts.store.limiter });
  // A create is validated and judged by the tenant's policy before admission claims its requestId and
  // charges it; a request id is checked for ownership by the same admission. Refused requests consume
  // nothing.
  const admit = createAdmitHook({
    admission: parts.store.admission,
    answerTakenRequestId: ownership.answerTakenRequestId,
  });

  for (const route of GATEWAY_ROUTES) {
    const takesBody = route.method === 'POST';
    app.route({
      method: route.method,
      url: route.path,
      config: { gatewayRoute: route },
      onRequest: [admitRequestTarget, authenticate],
      ...(takesBody ? { preValidation: validateRequestBody } : {}),
      preHandler: takesBody ? [enforcePolicy, admit] : [admit],
      handler: handlerFor(route),
      onSend: [
        ...(takesBody ? [ownership.settleClaim] : []),
        ...(route.successorPath === undefined ? [] : [addDeprecationHeaders(route)]),
      ],
      onResponse: countServedRequest,
      onError: showLimitsOnRefusal,
    });
  }
}
