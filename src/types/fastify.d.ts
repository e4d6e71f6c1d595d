// gengate's additions to Fastify's request and route types, declared in one place.
import type { RequestState } from '../gateway/request-state.ts';
import type { LoadShedReason } from '../observability/metrics.ts';
import type { GatewayRoute } from '../routing/route-table.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** What the gateway knows about the request; set by the app's first onRequest hook. */
    gateway: RequestState;
  }
  interface FastifyInstance {
    /**
     * Destroys every open connection and returns how many requests were in flight on them: what a drain
     * that outlived its deadline cuts (src/server/draining.ts).
     */
    cutConnections(): number;
    /** Why new requests are shed now, or undefined (src/overload/shed-load.ts). */
    loadShedReason(): LoadShedReason | undefined;
  }
  interface FastifyContextConfig {
    gatewayRoute?: GatewayRoute;
  }
}
