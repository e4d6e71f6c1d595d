// Turns a validated creation body into what the simulator will produce: the echo the GET record shows,
// the seeds and prices of the results. Defaults the service does not publish are marked as guesses.
import { randomBytes, randomUUID } from 'node:crypto';
import { IMAGE_DEFAULTS, MAX_SEED, VIDEO_SIZES, type OutputType } from '../maxai/schemas.ts';
import { imageCostUsd, videoCostUsd } from './pricing.ts';

export type JobKind = 'image' | 'video';

// [guess] The service's default sizes are not published.
const DEFAULT_IMAGE_SIZE = { width: 1024, height: 1024 };
const DEFAULT_VIDEO_SIZE = { width: 864, height: 480 };
const SEED_SPACE = MAX_SEED + 1n;

export interface PlannedResult {
  seed: bigint;
  costUsd: number;
}

export interface JobPlan {
  kind: JobKind;
  /** Lower case: the service treats request ids case-insensitively [guess]. */
  id: string;
  echo: Record<string, unknown>;
  outputType: OutputType;
  width: number;
  height: number;
  results: PlannedResult[];
  /** Images requested (samples) or video seconds requested, for the usage view. */
  images: number;
  videoSeconds: number;
}

type Body = Record<string, unknown>;

/** The service's "random" default seed: uniform over 0..2^63-1. */
function randomSeed(): bigint {
  return randomBytes(8).readBigUInt64BE() % SEED_SPACE;
}

// The schema has already judged every value; these only pick the value or the service's default.
function chosen<T>(body: Body, field: string, fallback: T): T {
  return (body[field] ?? fallback) as T;
}

function requestIdOf(body: Body): string {
  return chosen(body, 'requestId', randomUUID()).toLowerCase();
}

function seedOf(body: Body): bigint {
  const seed = body.seed;
  return typeof seed === 'number' || typeof seed === 'bigint' ? BigInt(seed) : randomSeed();
}

function sizeOf(body: Body, fallback: { width: number; height: number }) {
  const dimensions = (body.dimensions ?? {}) as { width?: number | null; height?: number | null };
  return { width: dimensions.width ?? fallback.width, height: dimensions.height ?? fallback.height };
}

export function planImageJob(body: Body): JobPlan {
  const seed = seedOf(body);
  const { width, height } = sizeOf(body, DEFAULT_IMAGE_SIZE);
  const outputType = chosen<OutputType>(body, 'outputType', IMAGE_DEFAULTS.outputType);
  const samples = chosen(body, 'samples', IMAGE_DEFAULTS.samples);
  const steps = chosen(body, 'steps', IMAGE_DEFAULTS.steps);
  const costUsd = imageCostUsd(width, height, steps);
  return {
    kind: 'image',
    id: requestIdOf(body),
    echo: {
      model: chosen(body, 'model', null),
      safetyLevel: chosen(body, 'safetyLevel', IMAGE_DEFAULTS.safetyLevel),
      scanResults: chosen(body, 'scanResults', null),
      input: chosen(body, 'input', null),
      outputQuality: chosen(body, 'outputQuality', IMAGE_DEFAULTS.outputQuality),
      outputType: [outputType],
      samples,
      cfgScale: chosen(body, 'CFGScale', IMAGE_DEFAULTS.CFGScale),
      steps,
      seed,
      scheduler: chosen(body, 'scheduler', null),
      advancedFeatures: chosen(body, 'advancedFeatures', null),
      // Other members (outpaint, unknown ones) are echoed as sent.
      dimensions: { ...(body.dimensions as object | null | undefined), width, height },
    },
    outputType,
    width,
    height,
    // Each sample gets the next seed, so sample i of seed s is sample 0 of seed s+i.
    results: Array.from({ length: samples }, (_, index) => ({
      seed: (seed + BigInt(index)) % SEED_SPACE,
      costUsd,
    })),
    images: samples,
    videoSeconds: 0,
  };
}

export function planVideoJob(body: Body): JobPlan {
  const seed = seedOf(body);
  const { width, height } = sizeOf(body, DEFAULT_VIDEO_SIZE);
  // The guessed range (2..12) has been applied, so the duration is a small number.
  const duration = Number(body.duration);
  const tier = VIDEO_SIZES.find((size) => size.width === width && size.height === height)?.tier ?? '480p';
  return {
    kind: 'video',
    id: requestIdOf(body),
    echo: {
      model: chosen(body, 'model', null),
      // The service forces high for video whatever was sent [doc].
      safetyLevel: 'high',
      input: chosen(body, 'input', null),
      outputType: ['url'],
      duration,
      seed,
      dimensions: { width, height },
    },
    outputType: 'url',
    width,
    height,
    results: [{ seed, costUsd: videoCostUsd(duration, tier) }],
    images: 0,
    videoSeconds: duration,
  };
}
