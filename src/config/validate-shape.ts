// Checks the file against ConfigSchema and fills in defaults. Ajv's messages are rewritten into plain
// words with dotted paths, and the noise of a failed union (one error per branch) folds into one line.
import { isIP, isIPv4 } from 'node:net';
import { Ajv, type ErrorObject } from 'ajv';
import { isRfc3339DateTime } from './date-time.ts';
import { formatPath, type ConfigProblem, type PathSegment } from './problems.ts';
import {
  ConfigSchema,
  DATE_TIME_FORMAT,
  HTTP_BASE_URL_FORMAT,
  PROXY_ADDRESSES_FORMAT,
  type GatewayConfig,
} from './schema.ts';

function isHttpBaseUrl(value: string): boolean {
  if (!URL.canParse(value) || value.includes('?') || value.includes('#')) return false;
  const url = new URL(value);
  return (
    (url.protocol === 'http:' || url.protocol === 'https:') &&
    url.username === '' &&
    url.password === '' &&
    url.pathname === '/'
  );
}

// proxy-addr (Fastify's trustProxy) throws at start-up on anything else: a comma-separated list of
// addresses, `address/bits`, IPv4 `address/netmask`, and its named ranges.
const NAMED_PROXY_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);
function isProxyAddress(text: string): boolean {
  if (NAMED_PROXY_RANGES.has(text)) return true;
  const [address = '', mask, ...more] = text.split('/');
  const family = isIP(address);
  if (family === 0 || more.length > 0) return false;
  if (mask === undefined) return true;
  if (/^\d{1,3}$/.test(mask)) return Number(mask) <= (family === 4 ? 32 : 128);
  return family === 4 && isIPv4(mask);
}

function isProxyAddressList(value: string): boolean {
  return value.split(',').every((part) => isProxyAddress(part.trim()));
}

const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: true, verbose: true });
ajv.addFormat(DATE_TIME_FORMAT, isRfc3339DateTime);
ajv.addFormat(HTTP_BASE_URL_FORMAT, isHttpBaseUrl);
ajv.addFormat(PROXY_ADDRESSES_FORMAT, isProxyAddressList);
const validateConfigSchema = ajv.compile<GatewayConfig>(ConfigSchema);

const TYPE_NAMES: Record<string, string> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'true or false',
  object: 'a mapping',
  array: 'a list',
};

function pointerSegments(pointer: string): PathSegment[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((raw) => {
      const segment = raw.replaceAll('~1', '/').replaceAll('~0', '~');
      return /^\d+$/.test(segment) ? Number(segment) : segment;
    });
}

function describedAs(error: ErrorObject, fallback: string): string {
  const description = (error.parentSchema as { description?: unknown } | undefined)?.description;
  return typeof description === 'string' ? `must be ${description}` : fallback;
}

function plainWords(error: ErrorObject): ConfigProblem {
  const segments = pointerSegments(error.instancePath);
  const params = error.params as Record<string, unknown>;
  const at = (message: string, extra: PathSegment[] = []) => ({
    path: formatPath([...segments, ...extra]),
    message,
  });
  switch (error.keyword) {
    case 'required':
      return at('is required', [String(params.missingProperty)]);
    case 'additionalProperties': {
      const key = JSON.stringify(params.additionalProperty);
      const parent = error.parentSchema as { patternProperties?: unknown; description?: unknown } | undefined;
      return parent?.patternProperties !== undefined && typeof parent.description === 'string'
        ? at(`invalid name ${key}: names are ${parent.description}`)
        : at(`unknown key ${key}`);
    }
    case 'type':
      return at(`must be ${TYPE_NAMES[String(params.type)] ?? String(params.type)}`);
    case 'enum':
      return at(`must be one of ${(params.allowedValues as unknown[]).map(String).join(', ')}`);
    case 'minimum':
      return at(`must be at least ${String(params.limit)}`);
    case 'maximum':
      return at(`must be at most ${String(params.limit)}`);
    case 'minLength':
      return at('must not be empty');
    case 'minItems':
      return at(`must list at least ${String(params.limit)} item${params.limit === 1 ? '' : 's'}`);
    case 'uniqueItems':
      return at(`must not list the same item twice (items ${String(params.j)} and ${String(params.i)})`);
    case 'pattern':
      return at(describedAs(error, `must match ${String(params.pattern)}`));
    case 'format':
      return at(describedAs(error, `must be a valid ${String(params.format)}`));
    case 'anyOf':
      return at(describedAs(error, 'does not have an accepted form'));
    default:
      return at(error.message ?? 'is not valid');
  }
}

export interface ShapeCheck {
  problems: ConfigProblem[];
  /** Whether the value at `segments`, and everything in it, passed the schema. */
  isWellFormed(segments: readonly PathSegment[]): boolean;
}

function pointerOf(segments: readonly PathSegment[]): string {
  return segments
    .map((segment) => `/${String(segment).replaceAll('~', '~0').replaceAll('/', '~1')}`)
    .join('');
}

const INTEGER_TEXT = /^-?\d+$/;
const NUMBER_TEXT = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/;
const BOOLEAN_TEXT: Record<string, boolean> = { true: true, false: false };

/** `text` read as the schema's `type`, or undefined when it does not spell one. */
function typedValue(text: string, type: unknown): number | boolean | undefined {
  if (type === 'integer' && INTEGER_TEXT.test(text)) return Number(text);
  if (type === 'number' && NUMBER_TEXT.test(text)) return Number(text);
  if (type === 'boolean') return BOOLEAN_TEXT[text];
  return undefined;
}

/**
 * Gives the values at `paths` (strings that came whole from an environment variable) the type the schema
 * asks for, where their text spells one. True when any changed.
 */
function typeTextValues(document: unknown, errors: readonly ErrorObject[], paths: readonly PathSegment[][]) {
  let changed = false;
  for (const error of errors) {
    if (error.keyword !== 'type' || !paths.some((path) => pointerOf(path) === error.instancePath)) continue;
    const segments = pointerSegments(error.instancePath);
    const key = segments.pop();
    const parent = segments.reduce<unknown>(
      (node, segment) => (node as Record<string, unknown>)[segment],
      document,
    );
    const text = (parent as Record<PathSegment, unknown>)[key ?? ''];
    const value =
      typeof text === 'string' ? typedValue(text, (error.params as { type: unknown }).type) : undefined;
    if (value !== undefined) {
      (parent as Record<PathSegment, unknown>)[key ?? ''] = value;
      changed = true;
    }
  }
  return changed;
}

/**
 * Validates `document` in place (defaults are filled in) and returns every problem found. The values at
 * `typedFromText` are strings that may stand for a number or a boolean (see src/config/interpolate.ts).
 */
export function validateConfigShape(
  document: unknown,
  typedFromText: readonly PathSegment[][] = [],
): ShapeCheck {
  if (validateConfigSchema(document)) return { problems: [], isWellFormed: () => true };
  if (typeTextValues(document, validateConfigSchema.errors ?? [], typedFromText)) {
    return validateConfigShape(document);
  }
  const errors = validateConfigSchema.errors ?? [];
  // A failed union reports itself once; the reasons each branch failed would only confuse.
  const unionPaths = errors
    .filter((error) => error.keyword === 'anyOf')
    .map((error) => `${error.schemaPath}/`);
  const problems = errors
    .filter((error) => !unionPaths.some((unionPath) => error.schemaPath.startsWith(unionPath)))
    .map(plainWords);
  // An unknown or misnamed key is the problem of that key's value alone; a missing member stays the
  // problem of its parent, which is not well-formed without it.
  const errorPointers = errors.map((error) => {
    if (error.keyword !== 'additionalProperties') return error.instancePath;
    const key = String((error.params as { additionalProperty: unknown }).additionalProperty);
    return `${error.instancePath}${pointerOf([key])}`;
  });
  return {
    problems,
    isWellFormed(segments) {
      const pointer = pointerOf(segments);
      return !errorPointers.some((at) => at === pointer || at.startsWith(`${pointer}/`));
    },
  };
}
