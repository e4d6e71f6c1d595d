// Compiles the request schemas of src/maxai/schemas.ts once and explains failures the way a developer
// wants to read them: one problem per field, dotted paths, the most useful problem first.
import { Ajv, type AnySchema, type ErrorObject } from 'ajv';
import { compareDecimals, isWholeDecimal, parseExactDecimal } from '../json/exact-decimal.ts';
import { NumberTexts, exactNumberAt } from '../json/number-texts.ts';
import type { ErrorDetail } from '../maxai/envelope.ts';
import { PATTERN_MESSAGES } from '../maxai/schemas.ts';

/** `unknown_field` is a top-level member the schema does not name (the gateway's `unknown_parameter`). */
export type ProblemKind = 'required' | 'type' | 'unknown_field' | 'enum' | 'format' | 'range';

export interface ValidationProblem extends ErrorDetail {
  kind: ProblemKind;
}

export type ValidationResult = { ok: true } | { ok: false; problems: ValidationProblem[] };
/** `numbers` holds the source text of the body's numbers, which exactNumber judges instead of doubles. */
export type RequestValidator = (body: unknown, numbers?: NumberTexts) => ValidationResult;

/** Where Ajv found the value a keyword judges (the part of its DataValidationCxt read here). */
interface ValueLocation {
  parentData?: unknown;
  parentDataProperty?: string | number;
}

/** What Ajv passes as `this` to every keyword (its passContext option). */
interface ValidationContext {
  numbers: NumberTexts;
}

// Missing or mistyped values hide every other problem of the same field, so they come first.
const KIND_PRIORITY: Record<ProblemKind, number> = {
  required: 0,
  type: 1,
  unknown_field: 2,
  enum: 3,
  format: 4,
  range: 5,
};

const TYPE_NAMES: Record<string, string> = {
  object: 'an object',
  string: 'a string',
  boolean: 'a boolean',
  number: 'a number',
  integer: 'an integer',
  array: 'an array',
};

/** What Ajv expects a compiled custom keyword to be: a check that leaves its errors on itself. */
type KeywordCheck = ((this: ValidationContext, data: unknown, where?: ValueLocation) => boolean) & {
  errors?: Partial<ErrorObject>[];
};

interface ExactNumberSchema {
  integer: boolean;
  minimum?: string;
  maximum?: string;
  nullable: boolean;
}

function keywordError(kind: ProblemKind, message: string): Partial<ErrorObject> {
  return { message, params: { kind } };
}

// Every verdict is on the exact decimal value of the text the client wrote: `4.0000000000000001` is not an
// integer, `-1e-400` is below 0 and `1e400` a (large) integer, whatever doubles make of them.
function compileExactNumber(schema: ExactNumberSchema): KeywordCheck {
  const minimum = schema.minimum === undefined ? undefined : parseExactDecimal(schema.minimum);
  const maximum = schema.maximum === undefined ? undefined : parseExactDecimal(schema.maximum);
  const typeMessage = schema.integer ? 'must be an integer' : 'must be a number';
  const validate: KeywordCheck = function (this: ValidationContext, data: unknown, where) {
    if (data === null && schema.nullable) return true;
    const fails = (kind: ProblemKind, message: string) => {
      validate.errors = [keywordError(kind, message)];
      return false;
    };
    const isNumeric = typeof data === 'number' || typeof data === 'bigint';
    const exact = isNumeric
      ? exactNumberAt(this.numbers, where?.parentData, where?.parentDataProperty ?? '', data)
      : undefined;
    if (exact === undefined || (schema.integer && !isWholeDecimal(exact))) return fails('type', typeMessage);
    if (minimum !== undefined && compareDecimals(exact, minimum) < 0)
      return fails('range', `must be at least ${schema.minimum}`);
    if (maximum !== undefined && compareDecimals(exact, maximum) > 0)
      return fails('range', `must be at most ${schema.maximum}`);
    return true;
  };
  return validate;
}

function compileSizeOneOf(sizes: string[]): KeywordCheck {
  const allowed = new Set(sizes);
  const message = `must be one of the published sizes: ${sizes.join(', ')}`;
  const validate: KeywordCheck = (data: unknown) => {
    if (typeof data !== 'object' || data === null) return true;
    const { width, height } = data as { width?: unknown; height?: unknown };
    if (allowed.has(`${String(width)}x${String(height)}`)) return true;
    validate.errors = [keywordError('enum', message)];
    return false;
  };
  return validate;
}

const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true, passContext: true });
ajv.addKeyword({
  keyword: 'exactNumber',
  schemaType: 'object',
  metaSchema: {
    type: 'object',
    properties: {
      integer: { type: 'boolean' },
      minimum: { type: 'string', pattern: '^-?\\d+$' },
      maximum: { type: 'string', pattern: '^-?\\d+$' },
      nullable: { type: 'boolean' },
    },
    required: ['integer', 'nullable'],
    additionalProperties: false,
  },
  compile: compileExactNumber,
  errors: true,
});
ajv.addKeyword({
  keyword: 'sizeOneOf',
  schemaType: 'array',
  metaSchema: { type: 'array', items: { type: 'string' } },
  compile: compileSizeOneOf,
  errors: true,
});

function pathOf(instancePath: string, member?: string): string {
  const segments = instancePath
    .split('/')
    .slice(1)
    .map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~'));
  if (member !== undefined) segments.push(member);
  return segments.join('.');
}

function describeType(type: unknown): string {
  const names = (Array.isArray(type) ? type : [type]).filter((name) => name !== 'null').map(String);
  return `must be ${names.map((name) => TYPE_NAMES[name] ?? name).join(' or ')}`;
}

function toProblem(error: ErrorObject): ValidationProblem {
  const params = error.params as Record<string, unknown>;
  const param = pathOf(error.instancePath);
  switch (error.keyword) {
    case 'required':
      return {
        param: pathOf(error.instancePath, String(params.missingProperty)),
        message: 'is required',
        kind: 'required',
      };
    case 'additionalProperties':
      return {
        param: pathOf(error.instancePath, String(params.additionalProperty)),
        message: 'is not a known parameter',
        kind: 'unknown_field',
      };
    case 'type':
      return {
        param,
        message: param === '' ? 'must be a JSON object' : describeType(params.type),
        kind: 'type',
      };
    case 'enum': {
      const allowed = (params.allowedValues as unknown[]).filter((value) => value !== null).map(String);
      return { param, message: `must be one of ${allowed.join(', ')}`, kind: 'enum' };
    }
    case 'pattern':
      return {
        param,
        message: PATTERN_MESSAGES[String(params.pattern)] ?? `must match ${String(params.pattern)}`,
        kind: 'format',
      };
    default:
      return {
        param,
        message: error.message ?? 'is not valid',
        kind: kindOf(error),
      };
  }
}

/**
 * At most this many problems are explained: enough for every field of a schema, while a body of a
 * hundred thousand invented members gets a short answer instead of one many times its size.
 */
export const MAX_EXPLAINED_PROBLEMS = 50;

/** The kind of problem an Ajv error is, without building its explanation. */
function kindOf(error: ErrorObject): ProblemKind {
  switch (error.keyword) {
    case 'required':
      return 'required';
    case 'additionalProperties':
      return 'unknown_field';
    case 'type':
      return 'type';
    case 'enum':
      return 'enum';
    case 'pattern':
      return 'format';
    default:
      return ((error.params as Record<string, unknown>).kind as ProblemKind | undefined) ?? 'format';
  }
}

/**
 * Sorted by usefulness (kind, then the order Ajv found them), one problem per field (the most useful
 * one), at most MAX_EXPLAINED_PROBLEMS. Bucketed by kind rather than sorted, and explained only until
 * enough are found: linear in the errors, however many unknown members a body invents.
 */
function explainErrors(errors: ErrorObject[]): ValidationProblem[] {
  const byKind: ErrorObject[][] = Object.values(KIND_PRIORITY).map(() => []);
  for (const error of errors) byKind[KIND_PRIORITY[kindOf(error)]]?.push(error);
  const seen = new Set<string>();
  const explained: ValidationProblem[] = [];
  for (const bucket of byKind) {
    for (const error of bucket) {
      if (explained.length === MAX_EXPLAINED_PROBLEMS) return explained;
      const problem = toProblem(error);
      if (!seen.has(problem.param)) explained.push(problem);
      seen.add(problem.param);
    }
  }
  return explained;
}

/** `samples must be at most 20`; a problem of the whole body reads `body must be a JSON object`. */
export function describeProblem(problem: ErrorDetail): string {
  return `${problem.param === '' ? 'body' : problem.param} ${problem.message}`;
}

/** The problems as the envelope's `details`, without the internal `kind`. */
export function toErrorDetails(problems: ValidationProblem[]): ErrorDetail[] {
  return problems.map(({ param, message }) => ({ param, message }));
}

/** Compiles once; call at start-up, never per request. */
export function createRequestValidator(schema: AnySchema): RequestValidator {
  const validate = ajv.compile(schema);
  return (body, numbers = NumberTexts.none) => {
    const context: ValidationContext = { numbers };
    return validate.call(context, body)
      ? { ok: true }
      : { ok: false, problems: explainErrors(validate.errors ?? []) };
  };
}
