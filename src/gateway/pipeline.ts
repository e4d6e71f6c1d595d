// The gateway's request pipeline, top to bottom: every hook of the gateway is registered here, each a
// named function or plugin from its own module. Fastify runs a stage's app-wide hooks before the route's
// own, each in the order added (Fastify queues addHook and register calls alike, so a plugin's hooks
// keep their place among the others), so a request meets the steps in this order:
//
//   step             function or plugin (module)                          Fastify hook
//   context          requestState (gateway/request-state.ts)              onRequest, app
//   overload         loadShedding (overload/shed-load.ts)                 onRequest, app
//   observe: start   requestObserver (gateway/request-observer.ts)        onRequest, app
//   request head     admitRequestHead (gateway/request-head.ts)           onRequest, app
//   target check     admitRequestTarget (gateway/request-target.ts)       onRequest, route
//   authentication   authenticate (gateway/routes.ts)                     onRequest, route
//   body memory      holdRequestBody (gateway/hold-request-body.ts)       preParsing, POST routes
//   expect           continueWhenAllowed (gateway/expect-continue.ts)     preParsing, POST routes
//   parse            jsonBodyParser (gateway/json-body-parser.ts)         content-type parser
//   validate         validateRequestBody (gateway/validate-request.ts)    preValidation, POST routes
//   policy           enforcePolicy (gateway/policy-hook.ts)               preHandler, POST routes
//   admission        admit (gateway/admit.ts)                             preHandler, route
//                    (gengate's own webhook routes: chargeLimits, gateway/routes.ts, the limits alone)
//   forward          handlerFor(route) (gateway/routes.ts)                handler
//   private answer   markAnswerPrivate (gateway/private-answers.ts)       onSend, app
//   record: claim    settleClaim (gateway/ownership-hooks.ts)             onSend, POST routes
//   record: job      followCreate (gateway/job-hooks.ts)                  onSend, POST routes
//   job's end        observeJobEnd (gateway/job-hooks.ts)                 onSend, polls and DELETE
//   observe          the request observer, then the served-request count  onResponse, app then route
//                    (countServedRequest, gateway/routes.ts)
//
// On a refusal: validationFailureCounter (gateway/validation-failure-counter.ts) and showLimitsOnRefusal
// (gateway/routes.ts) run as onError, then installErrorHandling (errors/error-handler.ts) writes the
// envelope. Draining (server/draining.ts) adds Connection: close in onSend while the server closes.
// The plugins (fastify-plugin, named gengate-*) declare the ones they need loaded first: the observer,
// the body parser and the failure counter read the request's state (gengate-request-state).
// Hooks that await nothing take Fastify's `done` callback (docs/architecture.md, "Hooks").
import type { WebhookService } from '../webhooks/service.ts';
import { installWebhookDeliveryRoutes } from './webhook-deliveries.ts';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { TenantDirectory } from '../auth/tenant-directory.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { answerConnectRequests } from '../errors/client-error.ts';
import { installErrorHandling } from '../errors/error-handler.ts';
import { compilePrices } from '../usage/pricing.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import { loadShedding } from '../overload/shed-load.ts';
import { GATEWAY_ROUTES } from '../routing/route-table.ts';
import { limitConnections } from '../server/connection-limits.ts';
import { limitSendTime } from '../server/send-timeout.ts';
import { draining } from '../server/draining.ts';
import type { GatewayStore } from '../store/gateway-store.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import { createCredentialHealth, type CredentialHealth } from '../upstream/credential-health.ts';
import { createAdmitHook } from './admit.ts';
import { createContinueGate, handExpectationsToTheApp } from './expect-continue.ts';
import { createRequestBodyHold } from './hold-request-body.ts';
import { installAuthFailureGuard } from './auth-failure-guard.ts';
import { jsonBodyParser } from './json-body-parser.ts';
import { createOwnershipHooks } from './ownership-hooks.ts';
import { createPolicyHook } from './policy-hook.ts';
import { markAnswerPrivate } from './private-answers.ts';
import { admitRequestHead } from './request-head.ts';
import { countUnroutedAnswer, requestObserver } from './request-observer.ts';
import { requestState } from './request-state.ts';
import { admitRequestTarget } from './request-target.ts';
import { installJobFollowing } from './job-hooks.ts';
import { addDeprecationHeaders, createRouteSteps, type CredentialSource } from './routes.ts';
import { validateRequestBody } from './validate-request.ts';
import { validationFailureCounter } from './validation-failure-counter.ts';

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
  /** Shared with the start-up checks of the credentials; the pipeline makes its own when absent. */
  credentialHealth?: CredentialHealth;
  /** The tenant's webhook deliveries, listed and redelivered (src/webhooks/service.ts). */
  webhooks?: Pick<WebhookService, 'list' | 'redeliver'>;
  now?: () => number;
}

export function installGatewayPipeline(
  app: FastifyInstance,
  config: GatewayConfig,
  parts: GatewayParts,
): void {
  installErrorHandling(app);
  answerConnectRequests(app.server, parts.logger, countUnroutedAnswer(parts.metrics));
  handExpectationsToTheApp(app.server);
  limitConnections(app.server, {
    name: 'gateway',
    maxConnections: config.server.maxConnections,
    logger: parts.logger,
    metrics: parts.metrics,
  });
  parts.metrics.reportBytesInFlightFrom(parts.upstream.bytesInFlight);
  const stopSendTimeouts = limitSendTime(app.server, {
    sendTimeoutMs: config.server.sendTimeoutMs,
    bytesInFlight: parts.upstream.bytesInFlight,
    onTimeout: () => {
      parts.metrics.sendTimeouts.inc();
    },
  });
  app.addHook('onClose', (_app, done) => {
    stopSendTimeouts();
    done();
  });

  // App-wide, for every request (routed or not), in this order.
  void app.register(requestState);
  void app.register(draining);
  void app.register(loadShedding, { settings: config.server.overload, metrics: parts.metrics });
  void app.register(requestObserver, { metrics: parts.metrics, logPrompts: config.logging.prompts });
  app.addHook('onRequest', admitRequestHead);
  app.addHook('onSend', markAnswerPrivate);
  void app.register(jsonBodyParser, { bodyLimitBytes: config.server.bodyLimitBytes });
  void app.register(validationFailureCounter, { metrics: parts.metrics });

  // One set of prices for what admission reserves and what usage estimates.
  const prices = compilePrices(config.pricing);
  // Per route of the allowlist.
  const { authenticate, handlerFor, showLimitsOnRefusal, chargeLimits, countServedRequest } =
    createRouteSteps({
      tenants: parts.tenants,
      credentials: parts.credentials,
      upstream: parts.upstream,
      usage: parts.store.usage,
      prices,
      jobs: parts.store.jobs,
      limiter: parts.store.limiter,
      authFailures: installAuthFailureGuard(app, config.server.authenticationFailures),
      metrics: parts.metrics,
      credentialHealth:
        parts.credentialHealth ??
        createCredentialHealth(parts.metrics, Object.keys(config.upstream.credentials)),
      now: parts.now ?? Date.now,
    });
  const enforcePolicy = createPolicyHook(parts.metrics);
  const continueWhenAllowed = createContinueGate(parts.store.limiter);
  const holdRequestBody = createRequestBodyHold({
    bytesInFlight: parts.upstream.bytesInFlight,
    bodyLimitBytes: config.server.bodyLimitBytes,
    retryAfterSeconds: config.server.overload.retryAfterSeconds,
    onFull: () => {
      parts.metrics.loadShed.inc({ reason: 'bytes_in_flight' });
    },
  });
  const ownership = createOwnershipHooks({ store: parts.store.ownership, limiter: parts.store.limiter });
  // A create is validated and judged by the tenant's policy before admission claims its requestId and
  // charges it; a request id is checked for ownership by the same admission. Refused requests consume
  // nothing.
  const jobs = installJobFollowing(app, config, parts, prices);
  const admit = createAdmitHook({
    admission: parts.store.admission,
    answerTakenRequestId: ownership.answerTakenRequestId,
    ...jobs.admitOptions,
  });

  for (const route of GATEWAY_ROUTES) {
    const takesBody = route.method === 'POST';
    app.route({
      method: route.method,
      url: route.path,
      config: { gatewayRoute: route },
      onRequest: [admitRequestTarget, authenticate],
      ...(takesBody ? { preParsing: [holdRequestBody, continueWhenAllowed] } : {}),
      ...(takesBody ? { preValidation: validateRequestBody } : {}),
      preHandler: takesBody ? [enforcePolicy, admit] : [admit],
      handler: handlerFor(route),
      onSend: [
        ...(takesBody ? [ownership.settleClaim, jobs.followCreate] : []),
        ...(route.id === 'images.get' || route.id === 'videos.get' || route.id === 'videos.delete'
          ? [jobs.observeJobEnd]
          : []),
        ...(route.successorPath === undefined ? [] : [addDeprecationHeaders(route)]),
      ],
      onResponse: countServedRequest,
      onError: showLimitsOnRefusal,
    });
  }
  if (parts.webhooks !== undefined) {
    installWebhookDeliveryRoutes(app, {
      webhooks: parts.webhooks,
      authenticate,
      chargeLimits,
      countServedRequest,
    });
  }
}
