// Every create carries a requestId (docs/ownership.md): the client's, or a fresh UUID v4 that the
// gateway adds to the forwarded body, so the gateway knows the id before the upstream does.
import { randomUUID } from 'node:crypto';
import { rewriteTopLevelMembers, type JsonBody } from '../validation/json-body.ts';

/** The create's requestId and the body to forward: when the client sent none (or null), one is added. */
export function ensureRequestId(body: JsonBody): { body: JsonBody; requestId: string } {
  const offered = body.value.requestId;
  // Validation admits only a UUID v4 string or null here.
  if (typeof offered === 'string') return { body, requestId: offered };
  const requestId = randomUUID();
  // Spliced into the client's bytes, so every other byte is forwarded as sent.
  return { body: rewriteTopLevelMembers(body, { ...body.value, requestId }, ['requestId']), requestId };
}
