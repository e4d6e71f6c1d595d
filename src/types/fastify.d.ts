// gengate's additions to Fastify's request and route types, declared in one place.
import type { AuthenticatedCaller } from '../auth/tenant-directory.ts';
import type { GatewayRoute } from '../routing/route-table.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The allowlisted route the request matched; undefined for anything else (404, 405). */
    gatewayRoute?: GatewayRoute;
    /** performance.now() when the request arrived. */
    receivedAt?: number;
    /** Set by authentication on every gateway route. */
    caller?: AuthenticatedCaller;
    /** Milliseconds spent waiting on the upstream, when the request reached it. */
    upstreamMs?: number;
    /** The upstream's status code, when it answered. */
    upstreamStatus?: number;
    /** What the tenant's policy did, for the request's log line (rule and action words only). */
    policyLog?: Record<string, string>;
    /** A create's fresh claim of its requestId, until the response settles it. */
    ownershipClaim?: { requestId: string; tenantId: string } | undefined;
  }
  interface FastifyContextConfig {
    gatewayRoute?: GatewayRoute;
  }
}
