// The allowlist of contract section 3. Nothing reaches the upstream unless it matches a row here,
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

/** Paths grouped with the methods they allow, for the 405 answers and their `Allow` header. */
export function allowedMethodsByPath(routes: readonly GatewayRoute[]): Map<string, GatewayMethod[]> {
  const byPath = new Map<string, GatewayMethod[]>();
  for (const route of routes) {
    const methods = byPath.get(route.path) ?? [];
    methods.push(route.method);
    byPath.set(route.path, methods);
  }
  return byPath;
}

// Any UUID version: ids are assigned by clients (v4, checked by validation) or by the service.
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID_PATTERN.test(value);
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
