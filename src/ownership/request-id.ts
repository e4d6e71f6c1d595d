// Every create carries a requestId (contract section 7): the client's, or a fresh UUID v4 that the
// gateway adds to the forwarded body, so the gateway knows the id before the upstream does.
import { randomUUID } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { stringifyJson } from '../json/lossless.ts';
import { parsedJsonBody, type JsonBody } from '../validation/json-body.ts';

const CLOSING_BRACE = 0x7d;

/**
 * The body with `requestId` added. An absent member is spliced in before the closing brace, so every
 * byte the client sent is forwarded as sent; a null member is replaced, which needs a new serialisation.
 */
function withRequestId(body: JsonBody, requestId: string): JsonBody {
  const value = { ...body.value, requestId };
  if ('requestId' in body.value) return { raw: Buffer.from(stringifyJson(value), 'utf8'), value };
  // The body is a validated JSON object: its last `}` closes it (only whitespace may follow).
  const end = body.raw.lastIndexOf(CLOSING_BRACE);
  const separator = Object.keys(body.value).length === 0 ? '' : ',';
  const member = Buffer.from(`${separator}"requestId":"${requestId}"`, 'utf8');
  return { raw: Buffer.concat([body.raw.subarray(0, end), member, body.raw.subarray(end)]), value };
}

/** The create's requestId; when the client sent none (or null), assigns one and adds it to the body. */
export function ensureRequestId(request: FastifyRequest): string {
  const body = parsedJsonBody(request);
  const offered = body.value.requestId;
  // Validation admits only a UUID v4 string or null here.
  if (typeof offered === 'string') return offered;
  const requestId = randomUUID();
  request.body = withRequestId(body, requestId);
  return requestId;
}
