// One observation per request: the metrics and the single JSON log line, both built from an allowlist
// of fields (no headers, no bodies), so keys, tokens and raw request bytes cannot end up in either.
//
// The log line's fields (docs/operations.md, "Logs"): `reqId` (the X-Request-Id, bound by Fastify to
// every line of the request, see src/app.ts), `generationId` (the generation requestId on generation
// routes, so one grep follows a job from its create through every poll), tenant (also for an expired
// key's refusal), route, method, status, errorCode, keyPrefix (the configured prefix; for a refused key
// the first 8 characters of a well-formed one, never more), clientAddress (per server.trustProxy),
// blockedAddress (on too_many_authentication_failures), limit and limitDecision (the binding rate
// limit), durationMs, upstreamMs, the policy's fields, and the prompts only when `logging.prompts` is
// true. They answer "why was I refused?" (docs/operations.md).
import type { ServerResponse } from 'node:http';
import type { DoneFuncWithErrOrRes, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import { answeredErrorCode } from '../errors/error-handler.ts';
import { isLeftUnanswered, rawAnswerStatus } from '../errors/refused-connections.ts';
import type { GatewayMetrics, UpstreamErrorReason } from '../observability/metrics.ts';
import { isUuid, type GatewayRoute } from '../routing/route-table.ts';
import { requestIdParam } from './request-state.ts';

// Requests that matched no allowlisted route share one label value.
const UNMATCHED_ROUTE = 'unmatched';
const NO_TENANT = 'none';
// The method label too must not come from request data: any method outside this set is "other".
const METHOD_LABELS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']);
const OTHER_METHOD = 'other';
// The status logged and counted for a request whose connection closed before its answer began (the
// client went away, or the drain's deadline cut it): nginx's "client closed request".
const CONNECTION_CLOSED_STATUS = 499;
// What the gateway answers when the upstream did not (src/upstream/client.ts).
const UPSTREAM_ERROR_BY_STATUS = new Map<number, UpstreamErrorReason>([
  [504, 'timeout'],
  [502, 'unavailable'],
]);

export interface RequestObserverOptions {
  metrics: GatewayMetrics;
  /** `logging.prompts`: put a create's prompt texts on its log line. */
  logPrompts: boolean;
}

/** The parsed body of a create, when it was parsed (a refused content type leaves none). */
function createBodyOf(request: FastifyRequest, route: GatewayRoute | undefined) {
  return route?.method === 'POST' ? request.gateway.body?.value : undefined;
}

/**
 * The generation requestId: a get's or delete's path id, a create's body id (the client's, or the one the
 * gateway assigned). Only a UUID is logged, lower-cased as the upstream receives it: an id that is not one
 * was refused, and is request data the log must not carry.
 */
function generationIdOf(request: FastifyRequest, route: GatewayRoute | undefined): string | undefined {
  const id = route?.hasRequestId === true ? requestIdParam(request) : createBodyOf(request, route)?.requestId;
  return typeof id === 'string' && isUuid(id) ? id.toLowerCase() : undefined;
}

function promptsOf(body: Record<string, unknown> | undefined) {
  const input = body?.input;
  if (typeof input !== 'object' || input === null) return undefined;
  const { positivePrompt, negativePrompt } = input as Record<string, unknown>;
  return {
    positivePrompt: typeof positivePrompt === 'string' ? positivePrompt : undefined,
    negativePrompt: typeof negativePrompt === 'string' ? negativePrompt : undefined,
  };
}

function addRequestIdHeader(
  request: FastifyRequest,
  reply: FastifyReply,
  payload: unknown,
  done: DoneFuncWithErrOrRes,
): void {
  reply.header('x-request-id', request.id);
  done(null, payload);
}

export const requestObserver = fp<RequestObserverOptions>(
  (app, { metrics, logPrompts }, done) => {
    // The reply of each response still being served, for the one 'close' listener all responses share.
    // Dropped as soon as the request is observed: a connection's last response lives until its next
    // request, and a response that kept its request reachable that long (a closure did) had every
    // request's objects outlive the young generation, at 15% more CPU per request at full load
    // (docs/decisions/0073-no-request-held-by-its-response.md).
    const servedReplies = new WeakMap<ServerResponse, FastifyReply>();
    // 'close' fires exactly once, whether the response finished or its connection closed first. A
    // finished one is observed by the onResponse hook; one whose connection closed first (a create may
    // have been forwarded and charged by then) never finishes, and is observed here, with the status the
    // client got: the raw answer to a request refused midway, the status of an answer cut after it
    // began, or 499 when nothing was sent. A request that came after its connection was refused is never
    // answered, and is no request served.
    function leaveInflight(this: ServerResponse): void {
      metrics.inflight.dec();
      if (this.writableFinished || isLeftUnanswered(this)) return;
      const reply = servedReplies.get(this);
      if (reply === undefined) return;
      const sent = this.headersSent ? reply.statusCode : CONNECTION_CLOSED_STATUS;
      observe(reply.request, reply, rawAnswerStatus(this) ?? sent, true);
    }

    function enterInflight(_request: FastifyRequest, reply: FastifyReply, next: HookHandlerDoneFunction) {
      metrics.inflight.inc();
      servedReplies.set(reply.raw, reply);
      reply.raw.on('close', leaveInflight);
      next();
    }

    function observeRequest(request: FastifyRequest, reply: FastifyReply, next: HookHandlerDoneFunction) {
      observe(request, reply, reply.statusCode, false);
      next();
    }

    function observe(
      request: FastifyRequest,
      reply: FastifyReply,
      status: number,
      connectionClosed: boolean,
    ): void {
      const state = request.gateway;
      if (state.observed) return;
      state.observed = true;
      servedReplies.delete(reply.raw);
      const totalMs = performance.now() - state.receivedAt;
      const route = state.route?.id ?? UNMATCHED_ROUTE;
      const tenant = state.caller?.tenant.id ?? NO_TENANT;
      const method = METHOD_LABELS.has(request.method) ? request.method : OTHER_METHOD;
      metrics.httpRequests.labels(route, method, String(status), tenant).inc();
      metrics.httpDuration.labels(route).observe(totalMs / 1000);
      if (state.upstreamMs !== undefined) {
        const upstreamStatus = state.upstreamStatus === undefined ? 'error' : String(state.upstreamStatus);
        metrics.upstreamDuration.labels(route, upstreamStatus).observe(state.upstreamMs / 1000);
        const reason = state.upstreamStatus === undefined ? UPSTREAM_ERROR_BY_STATUS.get(status) : undefined;
        if (reason !== undefined) metrics.upstreamErrors.inc({ route, reason });
      }
      metrics.overhead.labels(route).observe(Math.max(0, totalMs - (state.upstreamMs ?? 0)) / 1000);
      const errorCode = answeredErrorCode(reply);
      request.log.info(
        {
          generationId: generationIdOf(request, state.route),
          tenant: state.caller?.tenant.id ?? state.refusedKey?.tenantId,
          route,
          method: request.method,
          status,
          errorCode,
          keyPrefix: state.caller?.keyPrefix ?? state.refusedKey?.prefix,
          clientAddress: request.ip,
          ...(errorCode === 'too_many_authentication_failures' ? { blockedAddress: request.ip } : undefined),
          limit: state.rateLimit?.limit,
          limitDecision: state.rateLimit?.decision,
          durationMs: round(totalMs),
          upstreamMs: state.upstreamMs === undefined ? undefined : round(state.upstreamMs),
          ...state.policyLog,
          ...(logPrompts ? promptsOf(createBodyOf(request, state.route)) : undefined),
          ...(connectionClosed ? { connectionClosed } : undefined),
        },
        'request',
      );
    }

    app.addHook('onRequest', enterInflight);
    app.addHook('onSend', addRequestIdHeader);
    app.addHook('onResponse', observeRequest);
    done();
  },
  { name: 'gengate-request-observer', fastify: '5.x', dependencies: ['gengate-request-state'] },
);

/**
 * Counts an answer given outside any request's lifecycle (malformed HTTP, a head too large or too slow, an
 * unknown method, a CONNECT: src/errors/client-error.ts), under the labels of a request that matched no
 * route, with method `other`: no method was parsed, or none the label knows (CONNECT).
 */
export function countUnroutedAnswer(metrics: GatewayMetrics) {
  return (status: number): void => {
    metrics.httpRequests.labels(UNMATCHED_ROUTE, OTHER_METHOD, String(status), NO_TENANT).inc();
  };
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
