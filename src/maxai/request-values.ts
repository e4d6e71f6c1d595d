// The members of a validated create body that the gateway charges and meters, read one way everywhere.
// Validation guarantees their types, not the service's guessed ranges, so both readers stay total.

/** An image request's `samples`: the service default 1 when omitted or null. */
export function requestedSamples(body: Record<string, unknown> | undefined): number {
  const samples = body?.samples;
  return typeof samples === 'number' && Number.isSafeInteger(samples) && samples > 0 ? samples : 1;
}

/**
 * A video request's `duration` in seconds. A duration below 1 counts as 0 (the service refuses it); one
 * too large to count exactly (the lossless parse gives a bigint) counts as more than any limit admits,
 * so it can never slip through as a small cost.
 */
export function requestedVideoSeconds(body: Record<string, unknown> | undefined): number {
  const duration = body?.duration;
  if (typeof duration === 'bigint') return duration > 0n ? Number.MAX_SAFE_INTEGER : 0;
  if (typeof duration !== 'number' || !Number.isInteger(duration)) return 0;
  return Number.isSafeInteger(duration) ? Math.max(0, duration) : Number.MAX_SAFE_INTEGER;
}
