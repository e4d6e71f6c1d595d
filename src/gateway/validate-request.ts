// The preValidation hook of the create routes: the parsed body judged against the service's schema,
// every problem explained, the first one named in `param`. A refused body never reaches the upstream.
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { gatewayError, type GatewayError } from '../errors/registry.ts';
import { describeProblem, toErrorDetails, type ValidationProblem } from '../validation/request-validator.ts';
import { routeSchemaFor } from '../validation/request-schemas.ts';
import { bodyOf, routeOf } from './request-state.ts';

function schemaViolation(problems: ValidationProblem[]): GatewayError {
  const [first] = problems;
  if (first === undefined) throw new Error('a failed validation reported no problem');
  return gatewayError(
    first.kind === 'unknown_field' ? 'unknown_parameter' : 'invalid_parameter',
    { problem: describeProblem(first) },
    { param: first.param, details: toErrorDetails(problems) },
  );
}

export function validateRequestBody(
  request: FastifyRequest,
  _reply: FastifyReply,
  done: HookHandlerDoneFunction,
): void {
  const schema = routeSchemaFor(routeOf(request).id);
  if (schema === undefined) throw new Error('body validation on a route without a request schema');
  const body = bodyOf(request);
  const result = schema.validate(body.value, body.numbers);
  if (!result.ok) throw schemaViolation(result.problems);
  done();
}
