// Counts refused bodies in gengate_validation_failures_total{route,param}: once per problem of each
// refused request, so one request with three bad fields adds three. `param` only ever takes a value
// from the route's schema; anything a client invented shares one label, and whole-body problems another.
// That set is fixed, so every route x param series starts at 0 when the app starts.
import type { FastifyError, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import { ROUTE_IDS, type RouteId } from '../config/route-ids.ts';
import { toGatewayError } from '../errors/error-handler.ts';
import type { ErrorCode, GatewayError } from '../errors/registry.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import { UNKNOWN_FIELD_MESSAGE } from '../validation/request-validator.ts';
import { routeSchemaFor } from '../validation/request-schemas.ts';

const UNKNOWN_PARAM_LABEL = '(unknown)';
const WHOLE_BODY_PARAM_LABEL = '(body)';

const BODY_VALIDATION_CODES: ReadonlySet<ErrorCode> = new Set([
  'invalid_json',
  'invalid_parameter',
  'unknown_parameter',
]);

export interface ValidationFailureCounterOptions {
  metrics: Pick<GatewayMetrics, 'validationFailures'>;
}

/**
 * The fields a refused body's problems are about, as the schema names them: a member the client invented
 * is `(unknown)` whatever its name (a top-level member named "dimensions.width" is not that field).
 */
function fieldsOf(failure: GatewayError, fieldPaths: ReadonlySet<string> | undefined): string[] {
  const label = (param: string) => (fieldPaths?.has(param) === true ? param : UNKNOWN_PARAM_LABEL);
  const fields = (failure.details ?? []).map((detail) =>
    detail.message === UNKNOWN_FIELD_MESSAGE ? UNKNOWN_PARAM_LABEL : label(detail.param),
  );
  // unknown_parameter names its first problem, a member the client invented, in `param` alone; any other
  // error with details lists its first problem there too.
  if (failure.code === 'unknown_parameter') fields.push(UNKNOWN_PARAM_LABEL);
  else if (failure.details === undefined && failure.param !== undefined) fields.push(label(failure.param));
  return fields;
}

/** The param labels of a refused body: its problems' fields, or the whole body when it names none. */
function paramLabels(route: RouteId, failure: GatewayError): Set<string> {
  const fields = fieldsOf(failure, routeSchemaFor(route)?.fieldPaths);
  return new Set(fields.length === 0 ? [WHOLE_BODY_PARAM_LABEL] : fields);
}

/** Every route x param series at 0 once the app starts, and each refused body counted (onError). */
export const validationFailureCounter = fp<ValidationFailureCounterOptions>(
  (app, { metrics }, done) => {
    for (const route of ROUTE_IDS) {
      const fieldPaths = routeSchemaFor(route)?.fieldPaths;
      if (fieldPaths === undefined) continue;
      for (const param of [...fieldPaths, UNKNOWN_PARAM_LABEL, WHOLE_BODY_PARAM_LABEL]) {
        metrics.validationFailures.inc({ route, param }, 0);
      }
    }
    function countValidationFailures(
      request: FastifyRequest,
      _reply: FastifyReply,
      error: FastifyError,
      next: HookHandlerDoneFunction,
    ): void {
      const route = request.gateway.route;
      const failure = toGatewayError(error);
      if (route !== undefined && BODY_VALIDATION_CODES.has(failure.code)) {
        for (const param of paramLabels(route.id, failure)) {
          metrics.validationFailures.inc({ route: route.id, param });
        }
      }
      next();
    }
    app.addHook('onError', countValidationFailures);
    done();
  },
  { name: 'gengate-validation-failure-counter', fastify: '5.x', dependencies: ['gengate-request-state'] },
);
