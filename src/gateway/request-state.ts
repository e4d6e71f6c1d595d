// What the gateway knows about a request, in one typed object per request (`request.gateway`): the
// allowlisted route it matched, when it arrived, who sent it, its parsed body (replaced here, never in
// `request.body`, by the policy's rewrite and the requestId assignment), what the policy did, the claim
// admission took, and the upstream's timing. Reading it through the accessors below turns a hook wired in
// the wrong place into a loud error instead of a silent `undefined`.
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import type { AuthenticatedCaller } from '../auth/tenant-directory.ts';
import type { TenantConfig } from '../config/schema.ts';
import type { JobIdentity, UnreservedJob } from '../jobs/book.ts';
import { gatewayError } from '../errors/registry.ts';
import type { GatewayRoute } from '../routing/route-table.ts';
import type { JsonBody } from '../validation/json-body.ts';

/** A create's fresh claim of its requestId, until the response settles it. */
export interface OwnershipClaim {
  requestId: string;
  tenantId: string;
}

export interface RequestState {
  /** The allowlisted route the request matched; undefined for anything else (404, 405). */
  readonly route: GatewayRoute | undefined;
  /** performance.now() when the request arrived. */
  readonly receivedAt: number;
  /** Set by authentication on every gateway route. */
  caller: AuthenticatedCaller | undefined;
  /**
   * For the log line of a refused key: the prefix of the key presented (well-formed ones only), and the
   * tenant whose key it was when it had expired.
   */
  refusedKey: { prefix: string; tenantId: string | undefined } | undefined;
  /** The binding rate limit's id and the limiter's decision, when the request was charged. */
  rateLimit: { limit: string | undefined; decision: string } | undefined;
  /** The body of a POST as parsed, then as the policy and the requestId assignment rewrote it. */
  body: JsonBody | undefined;
  /** A POST's body as the client sent it, as first parsed: what an idempotent repeat is compared on. */
  clientBody: JsonBody | undefined;
  /** What the tenant's policy did, for the request's log line (rule and action words only). */
  policyLog: Readonly<Record<string, string>> | undefined;
  ownershipClaim: OwnershipClaim | undefined;
  /** A create's job, reserved at admission, until its answer tells whether the upstream took it. */
  job: JobIdentity | undefined;
  /** A create's job admitted without its reservation (the store failed, failMode open), until its answer. */
  unreservedJob: Omit<UnreservedJob, 'answer' | 'firstPollMs'> | undefined;
  /**
   * Whether the request may have reached the upstream: false until it is handed to the upstream client,
   * and again when the client failed before writing it (a create never sent is a create refused).
   */
  sentUpstream: boolean;
  /** Milliseconds spent waiting on the upstream, when the request reached it. */
  upstreamMs: number | undefined;
  /** The upstream's status code, when it answered. */
  upstreamStatus: number | undefined;
  /** Whether its metrics and log line were written (once: answered, or cut before its answer was sent). */
  observed: boolean;
}

/** The first onRequest hook of the app. Every field is set here, so all states share one shape. */
function createRequestState(request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) {
  request.gateway = {
    // Recorded once: Fastify's `request.routeOptions` builds a new object on every read.
    route: request.routeOptions.config.gatewayRoute,
    receivedAt: performance.now(),
    caller: undefined,
    refusedKey: undefined,
    rateLimit: undefined,
    body: undefined,
    clientBody: undefined,
    policyLog: undefined,
    ownershipClaim: undefined,
    job: undefined,
    unreservedJob: undefined,
    sentUpstream: false,
    upstreamMs: undefined,
    upstreamStatus: undefined,
    observed: false,
  };
  done();
}

/**
 * Gives every request its state. The decoration itself has no value, as Fastify asks of an object-valued
 * one (an object given to decorateRequest would be shared by every request): each request gets its own
 * in the app's first onRequest hook.
 */
export const requestState = fp(
  (app, _options, done) => {
    app.decorateRequest('gateway');
    app.addHook('onRequest', createRequestState);
    done();
  },
  { name: 'gengate-request-state', fastify: '5.x' },
);

export function routeOf(request: FastifyRequest): GatewayRoute {
  const route = request.gateway.route;
  if (route === undefined) throw new Error('gateway hook on a route without gatewayRoute config');
  return route;
}

export function tenantOf(request: FastifyRequest): TenantConfig {
  const tenant = request.gateway.caller?.tenant;
  if (tenant === undefined) throw new Error('tenant read before authentication');
  return tenant;
}

/** The parsed body of a POST route; a request that sent none gets the same 415 as a wrong media type. */
export function bodyOf(request: FastifyRequest): JsonBody {
  const body = request.gateway.body;
  if (body === undefined) throw gatewayError('json_body_missing');
  return body;
}

/** The `{requestId}` path segment as the client wrote it (checked to be a UUID on admission). */
export function requestIdParam(request: FastifyRequest): string | undefined {
  return (request.params as { requestId?: string }).requestId;
}
