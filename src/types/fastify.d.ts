// gengate's additions to Fastify's request and route types, declared in one place.
import type { RequestState } from '../gateway/request-state.ts';
import type { GatewayRoute } from '../routing/route-table.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** What the gateway knows about the request; set by the app's first onRequest hook. */
    gateway: RequestState;
  }
  interface FastifyContextConfig {
    gatewayRoute?: GatewayRoute;
  }
}
