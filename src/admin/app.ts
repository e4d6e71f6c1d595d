// The admin server (docs/operations.md): metrics and probes on their own port, never on the
// gateway's, so scraping and probing do not mix with tenant traffic or its limits. It shares the event
// loop with tenants, so it is bounded like the gateway: its own connection cap, a short bound on each
// request (a trickled request is cut within a second of it), and /metrics rendered at most about once a
// second whatever the number of scrapers (rendering every series costs milliseconds of the loop: 64
// connections scraping in a loop raised the tenants' p50 from 1.2 ms to 259 ms). Even from the cache a
// scrape costs the loop its parsing and tens of kilobytes written: 64 connections scraping back to back
// still took the tenants' p50 from 1.5 ms to 60 ms on a busy machine, so scrapes are also paced: at most
// a few per tenth of a second are served, the others wait their turn (a scraper waits for its answer
// before it asks again, so a flood slows down to the pace instead of taking the loop). The probes are
// not paced: they are cheap, and a kubelet must not time out on them behind a flood of scrapes.
import { STATUS_CODES } from 'node:http';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyRequest,
  type HookHandlerDoneFunction,
  type onRequestHookHandler,
} from 'fastify';
import { DEFAULT_ADMIN_MAX_CONNECTIONS } from '../config/schema.ts';
import { createRequestIds } from '../errors/client-request-id.ts';
import { createClientErrorHandler } from '../errors/client-error.ts';
import { gatewayServerOptions } from '../gateway/server-options.ts';
import { limitConnections } from '../server/connection-limits.ts';
import { draining } from '../server/draining.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import type { Readiness } from './readiness.ts';

// A probe or a scrape arrives whole in milliseconds; anything slower is cut (408).
const ADMIN_REQUEST_TIMEOUT_MS = 5_000;
// Below Prometheus' shortest usual scrape interval (5 s): each scrape sees fresh values, and any number
// of scrapers cost one rendering a second.
const METRICS_CACHE_MS = 1_000;
// Scrapes served per window: 20 a second, far above what Prometheus servers (one scrape each per
// interval) ask for, and a bound on what a flood can take from tenants.
const SCRAPE_WINDOW_MS = 100;
const SCRAPES_PER_WINDOW = 2;

export interface AdminDependencies {
  logger: FastifyBaseLogger;
  metrics: GatewayMetrics;
  readiness: Readiness;
  /** Open connections at once (`admin.maxConnections`). */
  maxConnections?: number;
}

/** The Prometheus text, rendered at most once per METRICS_CACHE_MS; concurrent scrapes share one rendering. */
function cachedMetricsText(metrics: GatewayMetrics): () => Promise<string> {
  let rendering: Promise<string> | undefined;
  let renderedAtMs = Number.NEGATIVE_INFINITY;
  return () => {
    const now = performance.now();
    if (rendering === undefined || now - renderedAtMs >= METRICS_CACHE_MS) {
      renderedAtMs = now;
      rendering = metrics.registry.metrics();
      // A failed rendering is not kept: the next scrape tries again.
      rendering.catch(() => {
        rendering = undefined;
      });
    }
    return rendering;
  };
}

/**
 * The onRequest step of /metrics: lets SCRAPES_PER_WINDOW scrapes through per SCRAPE_WINDOW_MS, in
 * arrival order; the others wait for a later window. A scrape whose client went away while it waited
 * gives up its place: otherwise the scrapes a flood left behind would hold every window for seconds after
 * it, and a real scraper would wait behind them. One timer, only while scrapes wait.
 */
function pacedScrapes(): onRequestHookHandler {
  const waiting: { request: FastifyRequest; done: HookHandlerDoneFunction }[] = [];
  let windowStartedAt = Number.NEGATIVE_INFINITY;
  let served = 0;
  let timer: NodeJS.Timeout | undefined;
  const openWindowIfDue = (now: number) => {
    if (now - windowStartedAt < SCRAPE_WINDOW_MS) return;
    windowStartedAt = now;
    served = 0;
  };
  const serveWaiting = () => {
    timer = undefined;
    openWindowIfDue(performance.now());
    while (served < SCRAPES_PER_WINDOW) {
      const next = waiting.shift();
      if (next === undefined) break;
      if (next.request.raw.destroyed) continue;
      served += 1;
      next.done();
    }
    if (waiting.length > 0) timer = setTimeout(serveWaiting, SCRAPE_WINDOW_MS);
  };
  return (request, _reply, done) => {
    const now = performance.now();
    openWindowIfDue(now);
    if (waiting.length === 0 && served < SCRAPES_PER_WINDOW) {
      served += 1;
      done();
      return;
    }
    waiting.push({ request, done });
    timer ??= setTimeout(serveWaiting, windowStartedAt + SCRAPE_WINDOW_MS - now);
  };
}

export function buildAdminApp(deps: AdminDependencies): FastifyInstance {
  const app = Fastify({
    loggerInstance: deps.logger,
    logController: new LogController({ disableRequestLogging: true }),
    // The admin port's answers are not the gateway's requests: gengate_http_requests_total leaves them out.
    clientErrorHandler: createClientErrorHandler({
      logger: deps.logger,
      countAnswer: () => undefined,
      // The admin port holds no upstream token: only gengate's own secret prefixes are refused as ids.
      requestIds: createRequestIds(() => false),
    }),
    requestTimeout: ADMIN_REQUEST_TIMEOUT_MS,
    keepAliveTimeout: ADMIN_REQUEST_TIMEOUT_MS,
    http: gatewayServerOptions(ADMIN_REQUEST_TIMEOUT_MS),
  });
  limitConnections(app.server, {
    name: 'admin',
    maxConnections: deps.maxConnections ?? DEFAULT_ADMIN_MAX_CONNECTIONS,
    logger: deps.logger,
    metrics: deps.metrics,
  });
  void app.register(draining);
  // Fastify's own answers name the method and URL ("Route GET:/x not found") or quote the request: the
  // admin port's errors echo nothing the client sent.
  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ status: 'not found' }));
  app.setErrorHandler((error: { statusCode?: number }, request, reply) => {
    const status = error.statusCode !== undefined && error.statusCode >= 400 ? error.statusCode : 500;
    if (status >= 500) request.log.error({ err: error }, 'admin request failed');
    return reply.code(status).send({ status: STATUS_CODES[status]?.toLowerCase() ?? 'error' });
  });
  const metricsText = cachedMetricsText(deps.metrics);
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const ready = deps.readiness.state === 'ready';
    return reply.code(ready ? 200 : 503).send({ status: deps.readiness.state });
  });
  app.get('/metrics', { onRequest: pacedScrapes() }, async (_request, reply) => {
    const body = await metricsText();
    return reply.type(deps.metrics.registry.contentType).send(body);
  });
  return app;
}
