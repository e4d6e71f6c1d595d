// The allowlist of routes (README.md, "Routes"). Nothing reaches the upstream unless it matches a row here,
// and the upstream path is always rebuilt from the row, never copied from the client's request target.
import type { RouteId } from '../config/route-ids.ts';

export type GatewayMethod = 'GET' | 'POST' | 'DELETE';

export interface GatewayRoute {
  id: RouteId;
  method: GatewayMethod;
  /** Fastify path pattern as clients call it. */
  path: string;
  /** Present on a deprecated alias: the path of the route that replaces it. */
  successorPath?: string;
  /** Whether the path carries a `:requestId` segment. */
  hasRequestId: boolean;
}

const IMAGES = '/v1/images/generations';
const VIDEOS = '/v1/videos/generations';

export const GATEWAY_ROUTES: readonly GatewayRoute[] = [
  { id: 'images.create', method: 'POST', path: IMAGES, hasRequestId: false },
  { id: 'images.get', method: 'GET', path: `${IMAGES}/:requestId`, hasRequestId: true },
  { id: 'videos.create', method: 'POST', path: VIDEOS, hasRequestId: false },
  { id: 'videos.get', method: 'GET', path: `${VIDEOS}/:requestId`, hasRequestId: true },
  { id: 'videos.delete', method: 'DELETE', path: `${VIDEOS}/:requestId`, hasRequestId: true },
  { id: 'account.usage', method: 'GET', path: '/v1/account/usage', hasRequestId: false },
  {
    id: 'account.usage',
    method: 'GET',
    path: '/v1/usage',
    successorPath: '/v1/account/usage',
    hasRequestId: false,
  },
  { id: 'account.keys', method: 'GET', path: '/v1/account/keys', hasRequestId: false },
  {
    id: 'account.keys',
    method: 'GET',
    path: '/v1/keys',
    successorPath: '/v1/account/keys',
    hasRequestId: false,
  },
];

// Any UUID version: ids are assigned by clients (v4, checked by validation) or by the service.
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID_PATTERN.test(value);
}

// The methods each path allows, for the 405 answers and their `Allow` header, keyed by the exact target
// of a static path or by the prefix before a `{requestId}`.
const METHODS_BY_STATIC_PATH = new Map<string, GatewayMethod[]>();
const METHODS_BY_ID_PREFIX = new Map<string, GatewayMethod[]>();
for (const route of GATEWAY_ROUTES) {
  const [byPath, key] = route.hasRequestId
    ? [METHODS_BY_ID_PREFIX, route.path.replace(':requestId', '')]
    : [METHODS_BY_STATIC_PATH, route.path];
  byPath.set(key, [...(byPath.get(key) ?? []), route.method]);
}

// gengate's own routes (docs/webhooks.md): answered by the gateway, never forwarded, so they are not rows
// of GATEWAY_ROUTES; src/gateway/webhook-deliveries.ts registers them.
export const WEBHOOK_DELIVERIES_PATH = '/v1/gateway/webhook-deliveries';
const REDELIVER_SUFFIX = '/redeliver';

/** The canonical target of a redelivery. */
export function redeliverTarget(deliveryId: string): string {
  return `${WEBHOOK_DELIVERIES_PATH}/${deliveryId}${REDELIVER_SUFFIX}`;
}

function isRedeliverTarget(target: string): boolean {
  const prefix = `${WEBHOOK_DELIVERIES_PATH}/`;
  return (
    target.startsWith(prefix) &&
    target.endsWith(REDELIVER_SUFFIX) &&
    isUuid(target.slice(prefix.length, -REDELIVER_SUFFIX.length))
  );
}

/**
 * The methods allowed at a raw request target when it is exactly a path of the table (a `{requestId}`
 * being a UUID), whatever method was used; undefined for any other target.
 */
export function allowedMethodsAt(target: string): readonly GatewayMethod[] | undefined {
  if (target === WEBHOOK_DELIVERIES_PATH) return ['GET'];
  if (isRedeliverTarget(target)) return ['POST'];
  const exact = METHODS_BY_STATIC_PATH.get(target);
  if (exact !== undefined) return exact;
  for (const [prefix, methods] of METHODS_BY_ID_PREFIX) {
    if (target.startsWith(prefix) && isUuid(target.slice(prefix.length))) return methods;
  }
  return undefined;
}

/** Why a target that names no route misses a path of the table by one mistake a client can fix. */
export type NearMiss = 'id_not_uuid' | 'query_string' | 'trailing_slash';

/**
 * The mistake that keeps `target` from naming a path of the table, when it is one of the near misses:
 * a query string (no route takes one), a trailing slash, or a `{requestId}` segment that is not a UUID.
 * Undefined for anything further off; the answer is 404 route_not_found either way.
 */
export function nearMissOf(target: string): NearMiss | undefined {
  const query = target.indexOf('?');
  if (query !== -1)
    return allowedMethodsAt(target.slice(0, query)) === undefined ? undefined : 'query_string';
  if (target.length > 1 && target.endsWith('/') && allowedMethodsAt(target.slice(0, -1)) !== undefined) {
    return 'trailing_slash';
  }
  for (const prefix of METHODS_BY_ID_PREFIX.keys()) {
    const id = target.slice(prefix.length);
    if (target.startsWith(prefix) && id !== '' && !id.includes('/') && !isUuid(id)) return 'id_not_uuid';
  }
  return undefined;
}

/** The canonical request target of a route; the client's raw target must equal it byte for byte. */
export function canonicalTarget(
  route: Pick<GatewayRoute, 'path' | 'hasRequestId'>,
  requestId: string | undefined,
): string {
  return route.hasRequestId ? route.path.replace(':requestId', requestId ?? '') : route.path;
}

/** Where the upstream receives the request: the successor path, with a lower-case request id. */
export function upstreamPath(route: GatewayRoute, requestId: string | undefined): string {
  const path = route.successorPath ?? route.path;
  return route.hasRequestId ? path.replace(':requestId', (requestId ?? '').toLowerCase()) : path;
}
