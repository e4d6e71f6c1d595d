// Admission of a request target (docs/architecture.md, "The allowlist is enforced on the raw request
// target"), before authentication and before any body is read. Fastify's router decodes percent-encodings and
// accepts spellings that name no route (see docs/architecture.md), so only the exact canonical target of the
// matched route is admitted.
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { routeNotFound } from '../errors/error-handler.ts';
import { gatewayError } from '../errors/registry.ts';
import { canonicalTarget, isUuid, type GatewayRoute } from '../routing/route-table.ts';
import { requestIdParam, routeOf } from './request-state.ts';

/** 404 route_not_found unless the raw target is byte for byte the canonical path of `route`. */
function assertCanonicalTarget(
  request: FastifyRequest,
  route: Pick<GatewayRoute, 'path' | 'hasRequestId'>,
): void {
  const requestId = requestIdParam(request);
  if (route.hasRequestId && (requestId === undefined || !isUuid(requestId))) throw routeNotFound();
  if (request.raw.url !== canonicalTarget(route, requestId)) throw routeNotFound();
}

/** The canonical target, no body on GET/DELETE, and no compressed body. */
export function admitRequestTarget(
  request: FastifyRequest,
  _reply: FastifyReply,
  done: HookHandlerDoneFunction,
): void {
  const route = routeOf(request);
  assertCanonicalTarget(request, route);
  if (route.method !== 'POST') {
    const hasBody =
      request.headers['transfer-encoding'] !== undefined ||
      Number(request.headers['content-length'] ?? 0) > 0;
    if (hasBody) throw gatewayError('body_not_allowed', { method: route.method });
  }
  const encoding = request.headers['content-encoding'];
  if (encoding !== undefined && encoding.toLowerCase() !== 'identity') {
    throw gatewayError('body_compressed');
  }
  done();
}
