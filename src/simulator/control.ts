// The control API under /__simulator/, for tests and local demos only (never for production): read or
// clear the request record, set or clear the active fault. It is not under /v1, is not recorded, and
// faults never apply to it.
import type { FastifyInstance } from 'fastify';
import { parseJsonLossless } from './lossless-json.ts';
import { createRequestValidator, describeProblem, toErrorDetails } from '../validation/request-validator.ts';
import { simulatedError } from './errors.ts';
import { FAULT_SCHEMA, type Fault, type FaultSwitch } from './faults.ts';
import type { RequestRecord } from './record.ts';

export const CONTROL_PREFIX = '/__simulator/';

const validateFault = createRequestValidator(FAULT_SCHEMA);

function parseFault(body: unknown): Fault {
  let value: unknown;
  try {
    value = parseJsonLossless(Buffer.isBuffer(body) ? body.toString('utf8') : '');
  } catch {
    throw simulatedError('invalid_json', 'the request body is not valid JSON');
  }
  const result = validateFault(value);
  if (!result.ok) {
    const [first] = result.problems;
    throw simulatedError(
      'invalid_parameter',
      first === undefined ? 'invalid fault' : describeProblem(first),
      {
        ...(first === undefined ? {} : { param: first.param }),
        details: toErrorDetails(result.problems),
      },
    );
  }
  return value as Fault;
}

export function registerControlRoutes(
  app: FastifyInstance,
  record: RequestRecord,
  faults: FaultSwitch,
): void {
  app.get(`${CONTROL_PREFIX}requests`, () => ({
    requests: record.entries.map((entry) => ({ ...entry, body: entry.body.toString('base64') })),
  }));
  app.delete(`${CONTROL_PREFIX}requests`, (_request, reply) => {
    record.clear();
    return reply.code(204).send();
  });
  app.get(`${CONTROL_PREFIX}faults`, () => ({ fault: faults.current() ?? null }));
  app.put(`${CONTROL_PREFIX}faults`, (request, reply) => {
    faults.set(parseFault(request.body));
    return reply.code(204).send();
  });
  app.delete(`${CONTROL_PREFIX}faults`, (_request, reply) => {
    faults.clear();
    return reply.code(204).send();
  });
}
