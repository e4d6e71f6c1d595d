// The request bodies the service accepts, as JSON Schemas built from the service's published table
// (docs/validation.md, "The schema"). Two custom keywords are understood by src/validation/request-validator.ts:
// exactNumber: { integer, minimum?, maximum?, nullable }  a number within inclusive bounds written as digit
// strings, judged on the exact decimal value of the text the client wrote; sizeOneOf:   ["640x640", ...]  an
// object whose width x height is one of the listed sizes. Integers use exactNumber rather than Ajv's `type:
// integer` so that a 19-digit seed is judged on its exact digits, `4.0000000000000001` is no integer, and an
// enormous `samples` reads "must be at most 20".

export interface RequestSchemaOptions {
  /** `reject` answers unknown top-level fields (the gateway); `allow` ignores them (the service). */
  unknownTopLevel: 'allow' | 'reject';
  /** Apply the ranges the service's table marks as guesses (docs/simulator.md): the simulator only. */
  guessedRanges: boolean;
}

const UUID_V4_PATTERN =
  '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$';
/** `<vendor>@<model_name>`: exactly one `@`, both parts non-empty, no whitespace. */
const MODEL_ID_PATTERN = '^[^@\\s]+@[^@\\s]+$';

/** How a failed `pattern` is explained to a developer. */
export const PATTERN_MESSAGES: Readonly<Record<string, string>> = {
  [UUID_V4_PATTERN]: 'must be a UUID v4',
  [MODEL_ID_PATTERN]: 'must have the form <vendor>@<model_name>',
};

export const MAX_SEED = 9223372036854775807n;

export const SAFETY_LEVELS = ['low', 'medium', 'high'] as const;
const OUTPUT_TYPES = ['url', 'base64', 'dataURI'] as const;
export type SafetyLevel = (typeof SAFETY_LEVELS)[number];
export type OutputType = (typeof OUTPUT_TYPES)[number];

/** The service's documented defaults for an image request (docs/policy.md). */
export const IMAGE_DEFAULTS = {
  safetyLevel: 'medium',
  outputQuality: 95,
  outputType: 'url',
  samples: 1,
  CFGScale: 5,
  steps: 25,
} as const;

/** Inclusive ranges; `guess` marks what the upstream page only infers. */
const IMAGE_RANGES = {
  outputQuality: { minimum: 1, maximum: 99 },
  samples: { minimum: 1, maximum: 20 },
  CFGScale: { minimum: 1, maximum: 50 },
  steps: { minimum: 1, maximum: 50 },
  seedImageStrength: { minimum: 0, maximum: 1, guess: true },
  dimension: { minimum: 128, maximum: 2048, guess: true },
} as const;

const VIDEO_DURATION_RANGE = { minimum: 2, maximum: 12, guess: true } as const;

/** The published video sizes and their price tier [doc]. */
export const VIDEO_SIZES = [
  { width: 640, height: 640, tier: '480p' },
  { width: 736, height: 544, tier: '480p' },
  { width: 544, height: 736, tier: '480p' },
  { width: 480, height: 864, tier: '480p' },
  { width: 864, height: 480, tier: '480p' },
  { width: 960, height: 416, tier: '480p' },
  { width: 960, height: 960, tier: '720p' },
  { width: 1120, height: 832, tier: '720p' },
  { width: 832, height: 1120, tier: '720p' },
  { width: 704, height: 1248, tier: '720p' },
  { width: 1248, height: 704, tier: '720p' },
  { width: 1504, height: 640, tier: '720p' },
  { width: 1440, height: 1440, tier: '1080p' },
  { width: 1664, height: 1248, tier: '1080p' },
  { width: 1248, height: 1664, tier: '1080p' },
  { width: 1088, height: 1920, tier: '1080p' },
  { width: 1920, height: 1088, tier: '1080p' },
  { width: 2176, height: 928, tier: '1080p' },
] as const;

export type VideoSize = (typeof VIDEO_SIZES)[number];
export type VideoTier = VideoSize['tier'];

interface Bounds {
  minimum: number | bigint;
  maximum: number | bigint;
  guess?: boolean;
}

function numberField(integer: boolean, bounds: Bounds | undefined, options: { nullable?: boolean } = {}) {
  return {
    exactNumber: {
      integer,
      ...(bounds === undefined ? {} : { minimum: String(bounds.minimum), maximum: String(bounds.maximum) }),
      nullable: options.nullable ?? true,
    },
  };
}

function guessed(bounds: Bounds, options: RequestSchemaOptions): Bounds | undefined {
  return bounds.guess === true && !options.guessedRanges ? undefined : bounds;
}

const nullableString = { type: ['string', 'null'] } as const;
const nullableBoolean = { type: ['boolean', 'null'] } as const;
const requestId = { type: ['string', 'null'], pattern: UUID_V4_PATTERN } as const;
const model = { type: ['string', 'null'], pattern: MODEL_ID_PATTERN } as const;
const seed = numberField(true, { minimum: 0n, maximum: MAX_SEED });
const safetyLevel = { enum: [...SAFETY_LEVELS, null] } as const;

function topLevel(options: RequestSchemaOptions) {
  return options.unknownTopLevel === 'reject' ? { additionalProperties: false } : {};
}

export function imageRequestSchema(options: RequestSchemaOptions) {
  const integer = (bounds?: Bounds) => numberField(true, bounds);
  const dimension = integer(guessed(IMAGE_RANGES.dimension, options));
  return {
    type: 'object',
    properties: {
      requestId,
      model,
      safetyLevel,
      scanResults: nullableBoolean,
      input: {
        type: ['object', 'null'],
        properties: {
          positivePrompt: nullableString,
          negativePrompt: nullableString,
          seedImage: nullableString,
          seedImageStrength: numberField(false, guessed(IMAGE_RANGES.seedImageStrength, options)),
        },
      },
      outputQuality: integer(IMAGE_RANGES.outputQuality),
      outputType: { enum: [...OUTPUT_TYPES, null] },
      samples: integer(IMAGE_RANGES.samples),
      CFGScale: numberField(false, IMAGE_RANGES.CFGScale),
      steps: integer(IMAGE_RANGES.steps),
      seed,
      scheduler: nullableString,
      advancedFeatures: { type: ['object', 'null'], properties: { layerDiffuse: nullableBoolean } },
      dimensions: {
        type: ['object', 'null'],
        properties: {
          width: dimension,
          height: dimension,
          outpaint: {
            type: ['object', 'null'],
            properties: { top: integer(), bottom: integer(), left: integer(), right: integer() },
          },
        },
      },
    },
    ...topLevel(options),
  } as const;
}

export function videoRequestSchema(options: RequestSchemaOptions) {
  return {
    type: 'object',
    required: ['duration'],
    properties: {
      duration: numberField(true, guessed(VIDEO_DURATION_RANGE, options), { nullable: false }),
      requestId,
      model,
      seed,
      // Accepted and ignored: the service forces high for video [doc].
      safetyLevel,
      input: {
        type: ['object', 'null'],
        properties: { positivePrompt: nullableString, frameImage: nullableString },
      },
      dimensions: {
        type: ['object', 'null'],
        properties: { width: numberField(true, undefined), height: numberField(true, undefined) },
        sizeOneOf: VIDEO_SIZES.map(({ width, height }) => `${width}x${height}`),
      },
    },
    ...topLevel(options),
  } as const;
}
