// Counts refused bodies in gengate_validation_failures_total{route,param}: once per problem of each
// refused request, so one request with three bad fields adds three. `param` only ever takes a value
// from the route's schema; anything a client invented shares one label, and whole-body problems another.
// That set is fixed, so every route x param series starts at 0 when the app is built.
import type { FastifyInstance } from 'fastify';
import { ROUTE_IDS } from '../config/route-ids.ts';
import { toGatewayError } from '../errors/error-handler.ts';
import type { ErrorCode, GatewayError } from '../errors/registry.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import { routeSchemaFor } from './request-schemas.ts';

const UNKNOWN_PARAM_LABEL = '(unknown)';
const WHOLE_BODY_PARAM_LABEL = '(body)';

const BODY_VALIDATION_CODES: ReadonlySet<ErrorCode> = new Set([
  'invalid_json',
  'invalid_parameter',
  'unknown_parameter',
]);

function paramsOf(failure: GatewayError): string[] {
  if (failure.details !== undefined) return failure.details.map((detail) => detail.param);
  return failure.param === undefined ? [] : [failure.param];
}

export function installValidationFailureCounter(app: FastifyInstance, metrics: GatewayMetrics): void {
  for (const route of ROUTE_IDS) {
    const fieldPaths = routeSchemaFor(route)?.fieldPaths;
    if (fieldPaths === undefined) continue;
    for (const param of [...fieldPaths, UNKNOWN_PARAM_LABEL, WHOLE_BODY_PARAM_LABEL]) {
      metrics.validationFailures.inc({ route, param }, 0);
    }
  }
  app.addHook('onError', async (request, _reply, error) => {
    const route = request.gatewayRoute;
    const failure = toGatewayError(error);
    if (route === undefined || !BODY_VALIDATION_CODES.has(failure.code)) return;
    const fieldPaths = routeSchemaFor(route.id)?.fieldPaths;
    const params = paramsOf(failure);
    const labels = new Set(
      params.length === 0
        ? [WHOLE_BODY_PARAM_LABEL]
        : params.map((param) => (fieldPaths?.has(param) === true ? param : UNKNOWN_PARAM_LABEL)),
    );
    for (const param of labels) metrics.validationFailures.inc({ route: route.id, param });
  });
}
