// One observation per request: the metrics and the single JSON log line, both built from an allowlist
// of fields (no headers, no bodies), so keys, tokens and prompts cannot end up in either.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { GatewayMetrics } from './metrics.ts';

// Requests that matched no allowlisted route share one label value.
const UNMATCHED_ROUTE = 'unmatched';
const NO_TENANT = 'none';
// The method label too must not come from request data: any method outside this set is "other".
const METHOD_LABELS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']);
const OTHER_METHOD = 'other';

export function installRequestObserver(app: FastifyInstance, metrics: GatewayMetrics): void {
  const leaveInflight = () => {
    metrics.inflight.dec();
  };
  app.addHook('onRequest', (_request, reply, done) => {
    metrics.inflight.inc();
    // 'close' fires exactly once whether the response finished or the client went away, so one shared
    // listener does (once() would wrap it anew for every request).
    reply.raw.on('close', leaveInflight);
    done();
  });

  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-request-id', request.id);
    done(null, payload);
  });

  app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done) => {
    const totalMs = request.receivedAt === undefined ? 0 : performance.now() - request.receivedAt;
    const route = request.gatewayRoute?.id ?? UNMATCHED_ROUTE;
    const tenant = request.caller?.tenant.id ?? NO_TENANT;
    const status = reply.statusCode;
    const method = METHOD_LABELS.has(request.method) ? request.method : OTHER_METHOD;
    metrics.httpRequests.labels(route, method, String(status), tenant).inc();
    metrics.httpDuration.labels(route).observe(totalMs / 1000);
    if (request.upstreamMs !== undefined) {
      const upstreamStatus = request.upstreamStatus === undefined ? 'error' : String(request.upstreamStatus);
      metrics.upstreamDuration.labels(route, upstreamStatus).observe(request.upstreamMs / 1000);
    }
    metrics.overhead.labels(route).observe(Math.max(0, totalMs - (request.upstreamMs ?? 0)) / 1000);
    request.log.info(
      {
        tenant: request.caller?.tenant.id,
        route,
        method: request.method,
        status,
        durationMs: round(totalMs),
        upstreamMs: request.upstreamMs === undefined ? undefined : round(request.upstreamMs),
        ...request.policyLog,
      },
      'request',
    );
    done();
  });
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
