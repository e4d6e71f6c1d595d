// The admin server (docs/operations.md): metrics and probes on their own port, never on the
// gateway's, so scraping and probing do not mix with tenant traffic or its limits.
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { createClientErrorHandler } from '../errors/client-error.ts';
import { draining } from '../server/draining.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import type { Readiness } from './readiness.ts';

export interface AdminDependencies {
  logger: FastifyBaseLogger;
  metrics: GatewayMetrics;
  readiness: Readiness;
}

export function buildAdminApp(deps: AdminDependencies): FastifyInstance {
  const app = Fastify({
    loggerInstance: deps.logger,
    logController: new LogController({ disableRequestLogging: true }),
    clientErrorHandler: createClientErrorHandler(deps.logger),
  });
  void app.register(draining);
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const ready = deps.readiness.state === 'ready';
    return reply.code(ready ? 200 : 503).send({ status: deps.readiness.state });
  });
  app.get('/metrics', async (_request, reply) => {
    const body = await deps.metrics.registry.metrics();
    return reply.type(deps.metrics.registry.contentType).send(body);
  });
  return app;
}
