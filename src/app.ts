// Builds the gateway from its parts. It never listens, exits or reads the environment: src/main.ts
// does that, and tests build the same app with their own parts.
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import type { GatewayConfig } from './config/schema.ts';
import { createClientErrorHandler } from './errors/client-error.ts';
import { createRequestIds } from './errors/client-request-id.ts';
import { answerFrameworkError } from './errors/error-handler.ts';
import { installGatewayPipeline, type GatewayParts } from './gateway/pipeline.ts';
import { countUnroutedAnswer } from './gateway/request-observer.ts';
import { gatewayServerOptions } from './gateway/server-options.ts';

export function buildApp(config: GatewayConfig, deps: GatewayParts): FastifyInstance {
  const credentialNames = Object.keys(config.upstream.credentials);
  // A client offering an upstream token (or an id holding one) as its X-Request-Id gets a fresh id: the
  // token is never echoed. Asked only of an id a client offers.
  const requestIds = createRequestIds((offered) =>
    credentialNames.some((name) => offered.includes(deps.credentials.get(name))),
  );
  const app = Fastify({
    loggerInstance: deps.logger,
    // The request observer writes the one log line per request, from an allowlist of fields; `reqId`
    // (the X-Request-Id) is on every line of a request, apart from the generation id (`generationId`).
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'reqId' }),
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: createClientErrorHandler({
      logger: deps.logger,
      countAnswer: countUnroutedAnswer(deps.metrics),
      requestIds,
    }),
    genReqId: requestIds.forRequest,
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

  // Every hook of the request's path, in order: src/gateway/pipeline.ts.
  installGatewayPipeline(app, config, deps);
  return app;
}
