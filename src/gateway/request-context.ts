// What the gateway's hooks know about a request by the time they run: the allowlisted route it matched
// (from the route's config) and, after authentication, its tenant. Reading them through these functions
// turns a hook wired in the wrong place into a loud error instead of a silent `undefined`.
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { TenantConfig } from '../config/schema.ts';
import type { GatewayRoute } from '../routing/route-table.ts';

/**
 * Declares every field gengate keeps on a request (src/types/fastify.d.ts), so all requests share one
 * shape, and records the matched route once: Fastify's `request.routeOptions` builds a new object on
 * every read.
 */
export function installRequestContext(app: FastifyInstance): void {
  for (const field of [
    'gatewayRoute',
    'receivedAt',
    'caller',
    'upstreamMs',
    'upstreamStatus',
    'policyLog',
    'ownershipClaim',
  ] as const) {
    app.decorateRequest(field, undefined);
  }
  app.addHook('onRequest', (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    request.receivedAt = performance.now();
    request.gatewayRoute = request.routeOptions.config.gatewayRoute;
    done();
  });
}

export function gatewayRouteOf(request: FastifyRequest): GatewayRoute {
  const route = request.gatewayRoute;
  if (route === undefined) throw new Error('gateway hook on a route without gatewayRoute config');
  return route;
}

export function tenantOf(request: FastifyRequest): TenantConfig {
  const tenant = request.caller?.tenant;
  if (tenant === undefined) throw new Error('tenant read before authentication');
  return tenant;
}

/** The `{requestId}` path segment as the client wrote it (checked to be a UUID on admission). */
export function requestIdParam(request: FastifyRequest): string | undefined {
  return (request.params as { requestId?: string }).requestId;
}
