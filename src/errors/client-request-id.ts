// The X-Request-Id a client offered, kept only when it is short and plain enough to log and echo safely,
// and cannot be a secret: Fastify's id for every request it parses (src/app.ts), and the id of the answers
// Node's parser leaves to gengate (client-error.ts), read from the raw head the client sent when the parser
// gave up on it. A client that offers its own key, or a token, as its id must not have it logged and
// echoed (docs/security.md).
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { TENANT_KEY_PREFIX } from '../config/schema.ts';

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const REQUEST_ID_FIELD = /^x-request-id:[ \t]*([^\r\n]*?)[ \t]*$/i;
// A request line: a method token, a target without spaces, a version.
const REQUEST_LINE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+ [!-~]+ HTTP\/\d\.\d$/;

// Tenant keys and webhook secrets start with gengate's own prefixes: an id holding one may hold a secret.
const SECRET_PREFIX = new RegExp(`(?:${TENANT_KEY_PREFIX}|whsec_)`, 'i');

/** Whether `value` holds a secret the gateway has that has no prefix of its own (an upstream token). */
export type IsHeldSecret = (value: string) => boolean;

export interface RequestIds {
  /** The client's id when it offered a sane one, else a fresh UUID. */
  forRequest: (request: IncomingMessage) => string;
  /**
   * The sane X-Request-Id of the request whose head holds byte `failedAt` of `packet` (the bytes Node's
   * parser refused), when that head, from its request line, is in the packet and offers exactly one.
   */
  inRawHead: (packet: Buffer, failedAt: number) => string | undefined;
}

export function createRequestIds(isHeldSecret: IsHeldSecret): RequestIds {
  const saneOrUndefined = (offered: unknown): string | undefined =>
    typeof offered === 'string' &&
    SANE_REQUEST_ID.test(offered) &&
    !SECRET_PREFIX.test(offered) &&
    !isHeldSecret(offered)
      ? offered
      : undefined;
  return {
    forRequest: (request) => saneOrUndefined(request.headers['x-request-id']) ?? randomUUID(),
    inRawHead: (packet, failedAt) => saneOrUndefined(offeredInRawHead(packet, failedAt)),
  };
}

/** The one X-Request-Id value of the head holding byte `failedAt` of `packet`, as offered. */
function offeredInRawHead(packet: Buffer, failedAt: number): string | undefined {
  // latin1: one character per byte, so `failedAt` is an offset in the text too.
  const lines = packet.toString('latin1').split('\r\n');
  // The line the parser failed in: the first whose end (its CRLF included) lies past `failedAt`.
  let failedLine = 0;
  for (let offset = 0; failedLine < lines.length - 1; failedLine += 1) {
    offset += (lines[failedLine]?.length ?? 0) + 2;
    if (offset > failedAt) break;
  }
  // Its head starts at the last request line up to it, and ends at the first empty line after that. An
  // empty line on the way back ends an earlier message: the failing head's own line is not in the packet.
  let start = failedLine;
  while (start >= 0 && !REQUEST_LINE.test(lines[start] ?? '')) {
    if (lines[start] === '' && start < failedLine) return undefined;
    start -= 1;
  }
  if (start < 0) return undefined;
  const offered: string[] = [];
  for (let index = start + 1; index < lines.length && lines[index] !== ''; index += 1) {
    const value = REQUEST_ID_FIELD.exec(lines[index] ?? '')?.[1];
    if (value !== undefined) offered.push(value);
  }
  return offered.length === 1 ? offered[0] : undefined;
}
