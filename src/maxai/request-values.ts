// The members of a validated create body that the gateway charges and meters, read one way everywhere.
// Validation guarantees their types, not the service's guessed ranges, so both readers stay total.
import { VIDEO_SIZES, type VideoTier } from './schemas.ts';

/** An image request's `samples`: the service default 1 when omitted or null. */
export function requestedSamples(body: Record<string, unknown> | undefined): number {
  const samples = body?.samples;
  return typeof samples === 'number' && Number.isSafeInteger(samples) && samples > 0 ? samples : 1;
}

/**
 * A video request's `duration` in seconds. Validation admits only exact integers, whose doubles are
 * integers or infinite (rounding keeps order); a duration below 1 counts as 0 (the service refuses it),
 * one too large to count exactly counts as more than any limit admits, so it can never slip through as a
 * small cost.
 */
export function requestedVideoSeconds(body: Record<string, unknown> | undefined): number {
  const duration = body?.duration;
  if (typeof duration !== 'number' || !(duration >= 1)) return 0;
  return Number.isSafeInteger(duration) ? duration : Number.MAX_SAFE_INTEGER;
}

/** A video request's size tier, from its `dimensions`; undefined when it names no published size. */
export function requestedVideoTier(body: Record<string, unknown> | undefined): VideoTier | undefined {
  const dimensions = body?.dimensions;
  if (typeof dimensions !== 'object' || dimensions === null) return undefined;
  const { width, height } = dimensions as { width?: unknown; height?: unknown };
  return VIDEO_SIZES.find((size) => size.width === width && size.height === height)?.tier;
}
