// Builds the gateway from its parts. It never listens, exits or reads the environment: src/main.ts
// does that, and tests build the same app with their own parts.
import { randomUUID } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { IncomingMessage } from 'node:http';
import { installAuthFailureGuard } from './auth/failure-guard.ts';
import type { TenantDirectory } from './auth/tenant-directory.ts';
import type { GatewayConfig } from './config/schema.ts';
import { answerConnectRequests, createClientErrorHandler } from './errors/client-error.ts';
import { answerFrameworkError, installErrorHandling } from './errors/error-handler.ts';
import { installDraining } from './server/draining.ts';
import { installRequestContext } from './gateway/request-context.ts';
import { installRequestHeadAdmission } from './gateway/request-head.ts';
import { registerGatewayRoutes, type CredentialSource } from './gateway/routes.ts';
import { gatewayServerOptions } from './gateway/server-options.ts';
import type { GatewayMetrics } from './observability/metrics.ts';
import { installRequestObserver } from './gateway/request-observer.ts';
import { installLoadShedding } from './overload/shed-load.ts';
import type { OwnershipStore } from './ownership/store.ts';
import type { Admission } from './admission/admission.ts';
import type { RateLimiter } from './ratelimit/types.ts';
import type { UpstreamClient } from './upstream/client.ts';
import type { UsageMeter } from './usage/meter.ts';
import { installValidationFailureCounter } from './validation/failure-metrics.ts';
import { installJsonBodyParser } from './validation/json-body.ts';

export interface AppDependencies {
  logger: FastifyBaseLogger;
  /** Read per request, so a configuration reload swaps tenants without a restart. */
  tenants: () => TenantDirectory;
  credentials: CredentialSource;
  metrics: GatewayMetrics;
  upstream: UpstreamClient;
  usage: UsageMeter;
  limiter: RateLimiter;
  /** Who owns each request id; shared by every replica when the store is Redis. */
  ownership: OwnershipStore;
  /** A request's id and charge decided together (one store call on a single Redis). */
  admission: Admission;
  now?: () => number;
}

// A client's X-Request-Id is kept only when it is short and plain enough to log and echo safely.
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

function requestIdFor(request: IncomingMessage): string {
  const offered = request.headers['x-request-id'];
  return typeof offered === 'string' && SANE_REQUEST_ID.test(offered) ? offered : randomUUID();
}

export function buildApp(config: GatewayConfig, deps: AppDependencies): FastifyInstance {
  const app = Fastify({
    loggerInstance: deps.logger,
    // The request observer writes the one log line per request, from an allowlist of fields; `reqId`
    // (the X-Request-Id) is on every line of a request, apart from the generation id (`generationId`).
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'reqId' }),
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: createClientErrorHandler(deps.logger),
    genReqId: requestIdFor,
    requestIdHeader: false,
    bodyLimit: config.server.bodyLimitBytes,
    trustProxy: config.server.trustProxy,
    requestTimeout: config.server.requestTimeoutMs,
    http: gatewayServerOptions(config.server.requestTimeoutMs),
    keepAliveTimeout: config.server.keepAliveTimeoutMs,
    maxRequestsPerSocket: config.server.maxRequestsPerSocket,
    // Requests arriving while closing are served (src/server/draining.ts), not refused.
    return503OnClosing: false,
    exposeHeadRoutes: false,
    routerOptions: {
      caseSensitive: true,
      ignoreTrailingSlash: false,
      ignoreDuplicateSlashes: false,
    },
  });

  installErrorHandling(app);
  answerConnectRequests(app.server, deps.logger);
  installRequestContext(app);
  installDraining(app);
  installLoadShedding(app, config.server.overload, deps.metrics);
  installRequestObserver(app, deps.metrics, { logPrompts: config.logging.prompts });
  installRequestHeadAdmission(app);
  installJsonBodyParser(app, config.server.bodyLimitBytes);
  installValidationFailureCounter(app, deps.metrics);
  registerGatewayRoutes(app, {
    tenants: deps.tenants,
    credentials: deps.credentials,
    upstream: deps.upstream,
    usage: deps.usage,
    limiter: deps.limiter,
    ownership: deps.ownership,
    admission: deps.admission,
    authFailures: installAuthFailureGuard(app, config.server.authenticationFailures),
    metrics: deps.metrics,
    now: deps.now ?? Date.now,
  });
  return app;
}
