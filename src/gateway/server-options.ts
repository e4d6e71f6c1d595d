// The options of the Node HTTP server under the gateway (Fastify's `http` option), each deliberate:
// docs/security.md ("The HTTP edge in detail") wants ambiguous framing refused and slow clients cut near
// their bound.
import type { ServerOptions } from 'node:http';

/**
 * How often Node looks for requests past their deadline. Its default, 30 s, let a client outlive
 * `server.requestTimeoutMs` by up to that much; a check walks only the connections with a request in
 * progress, so twice a second costs nothing measurable.
 */
const CONNECTIONS_CHECKING_INTERVAL_MS = 500;

/**
 * The largest request head, Node's default pinned whatever NODE_OPTIONS says: beyond it, 431. It also
 * keeps the number of fields far below Node's `maxHeadersCount` (2000), past which Node would drop
 * fields silently, a second Authorization among them.
 */
const MAX_HEADER_BYTES = 16_384;

export function gatewayServerOptions(requestTimeoutMs: number): ServerOptions {
  return {
    maxHeaderSize: MAX_HEADER_BYTES,
    // Strict parsing whatever NODE_OPTIONS says (--insecure-http-parser would accept obs-fold, bare LF,
    // Transfer-Encoding with Content-Length): src/gateway/request-head.ts relies on it.
    insecureHTTPParser: false,
    // Node would answer a missing Host with a bare 400; src/gateway/request-head.ts answers it in the envelope.
    requireHostHeader: false,
    // One bound for the whole request, head and body, from its first byte (a connection that sends
    // nothing counts from its opening). Both are set here because Node checks at construction that the
    // headers' bound is not above the request's; Fastify sets `requestTimeout` again, to the same value.
    requestTimeout: requestTimeoutMs,
    headersTimeout: requestTimeoutMs,
    connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS,
  };
}
