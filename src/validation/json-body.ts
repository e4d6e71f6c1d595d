// The gateway's only JSON body parser: one strict, lossless parse whose result drives every decision
// and whose raw bytes are what the upstream receives when nothing had to change. Losslessness comes
// from the structure scan, which locates the few integers a double rounds; the parse itself is plain
// JSON.parse, several times cheaper than a reviver that is called for every value.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { gatewayError, type GatewayError } from '../errors/registry.ts';
import {
  MAX_JSON_DEPTH,
  scanJsonStructure,
  type ExactInteger,
  type PathSegment,
  type StructureProblem,
} from './json-structure.ts';

export interface JsonBody {
  /** The bytes exactly as the client sent them. */
  raw: Buffer;
  /** The parsed object; integer literals that are not safe integers are bigints with every digit. */
  value: Record<string, unknown>;
}

// `fatal` rejects invalid UTF-8; `ignoreBOM` keeps a BOM in the text so that JSON.parse rejects it.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const CHARSET_PARAMETER = /;\s*charset\s*=\s*"?([^";\s]+)"?/i;
const NOT_UTF8_JSON = 'the request body is not valid UTF-8 JSON';

function assertUtf8Charset(contentType: string | undefined): void {
  const charset = contentType === undefined ? undefined : CHARSET_PARAMETER.exec(contentType)?.[1];
  if (charset !== undefined && charset.toLowerCase() !== 'utf-8') {
    throw gatewayError('unsupported_media_type', 'request bodies must be application/json in UTF-8');
  }
}

function structureError(problem: Exclude<StructureProblem, { kind: 'too_deep' }>): GatewayError {
  const reason =
    problem.kind === 'duplicate_member'
      ? 'appears more than once; member names must be unique'
      : 'is a reserved member name (__proto__ and constructor are not accepted)';
  return gatewayError('invalid_json', `${problem.path} ${reason}`, { param: problem.path });
}

function decodeUtf8(raw: Buffer): string {
  try {
    return utf8.decode(raw);
  } catch (error) {
    throw gatewayError('invalid_json', NOT_UTF8_JSON, { cause: error });
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw gatewayError('invalid_json', NOT_UTF8_JSON, { cause: error });
  }
}

type JsonContainer = Record<PathSegment, unknown>;

/** Puts back the digits JSON.parse rounded away; each path names one value, as no member name repeats. */
function restoreExactIntegers(body: JsonContainer, exactIntegers: readonly ExactInteger[]): void {
  for (const { containerPath, key, literal } of exactIntegers) {
    let container = body;
    for (const segment of containerPath) container = container[segment] as JsonContainer;
    container[key] = BigInt(literal);
  }
}

export function parseJsonBody(raw: Buffer): JsonBody {
  if (raw.length === 0) throw gatewayError('invalid_json', 'the request body is empty; send a JSON object');
  const text = decodeUtf8(raw);
  const structure = scanJsonStructure(text);
  if (structure.problem?.kind === 'too_deep') {
    throw gatewayError('invalid_json', `the request body nests deeper than ${MAX_JSON_DEPTH} levels`);
  }
  const value = parseJson(text);
  if (structure.problem !== undefined) throw structureError(structure.problem);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw gatewayError('invalid_json', 'the request body must be a JSON object');
  }
  restoreExactIntegers(value as JsonContainer, structure.exactIntegers);
  return { raw, value: value as Record<string, unknown> };
}

/** The parsed body of a POST route; a request that sent none gets the same 415 as a wrong media type. */
export function parsedJsonBody(request: FastifyRequest): JsonBody {
  if (request.body === undefined) {
    throw gatewayError('unsupported_media_type', 'send a JSON object with Content-Type: application/json');
  }
  return request.body as JsonBody;
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
