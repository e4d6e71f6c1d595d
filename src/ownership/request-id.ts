// Every create carries a requestId (contract section 7): the client's, or a fresh UUID v4 that the
// gateway adds to the forwarded body, so the gateway knows the id before the upstream does.
import { randomUUID } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { parsedJsonBody, rewriteTopLevelMembers } from '../validation/json-body.ts';

/** The create's requestId; when the client sent none (or null), assigns one and adds it to the body. */
export function ensureRequestId(request: FastifyRequest): string {
  const body = parsedJsonBody(request);
  const offered = body.value.requestId;
  // Validation admits only a UUID v4 string or null here.
  if (typeof offered === 'string') return offered;
  const requestId = randomUUID();
  // Spliced into the client's bytes, so every other byte is forwarded as sent.
  request.body = rewriteTopLevelMembers(body, { ...body.value, requestId }, ['requestId']);
  return requestId;
}
