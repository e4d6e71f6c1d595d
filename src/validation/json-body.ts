// The gateway's only JSON body parser: one strict, lossless parse whose result drives every decision
// and whose raw bytes are what the upstream receives when nothing had to change.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { gatewayError } from '../errors/registry.ts';
import { parseJsonLossless } from '../json/lossless.ts';

export interface JsonBody {
  /** The bytes exactly as the client sent them. */
  raw: Buffer;
  /** The parsed object; integers beyond 2^53 are bigints with every digit. */
  value: Record<string, unknown>;
}

// `fatal` rejects invalid UTF-8; `ignoreBOM` keeps a BOM in the text so that JSON.parse rejects it.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const CHARSET_PARAMETER = /;\s*charset\s*=\s*"?([^";\s]+)"?/i;

function assertUtf8Charset(contentType: string | undefined): void {
  const charset = contentType === undefined ? undefined : CHARSET_PARAMETER.exec(contentType)?.[1];
  if (charset !== undefined && charset.toLowerCase() !== 'utf-8') {
    throw gatewayError('unsupported_media_type', 'request bodies must be application/json in UTF-8');
  }
}

export function parseJsonBody(raw: Buffer): JsonBody {
  if (raw.length === 0) throw gatewayError('invalid_json', 'the request body is empty; send a JSON object');
  let value: unknown;
  try {
    value = parseJsonLossless(utf8.decode(raw));
  } catch (error) {
    throw gatewayError('invalid_json', 'the request body is not valid UTF-8 JSON', { cause: error });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw gatewayError('invalid_json', 'the request body must be a JSON object');
  }
  return { raw, value: value as Record<string, unknown> };
}

export function installJsonBodyParser(app: FastifyInstance, bodyLimitBytes: number): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'buffer', bodyLimit: bodyLimitBytes },
    (request: FastifyRequest, raw: Buffer, done: (error: Error | null, body?: JsonBody) => void) => {
      try {
        assertUtf8Charset(request.headers['content-type']);
        done(null, parseJsonBody(raw));
      } catch (error) {
        done(error as Error);
      }
    },
  );
}
