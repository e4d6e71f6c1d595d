// The simulator's prices. Images: the service publishes none, so this formula is invented but
// deterministic: 0.002 USD per megapixel at the default 25 steps, proportional to steps. Video: the
// per-second prices by tier published by the service (docs/simulator.md) (0.0062 / 0.014 / 0.031 USD).
import type { VideoTier } from '../maxai/schemas.ts';

const IMAGE_USD_PER_MEGAPIXEL_AT_DEFAULT_STEPS = 0.002;
const IMAGE_REFERENCE_STEPS = 25;
const VIDEO_USD_PER_SECOND_BY_TIER: Record<VideoTier, number> = {
  '480p': 0.0062,
  '720p': 0.014,
  '1080p': 0.031,
};
const USD_DECIMALS = 6;

/** Rounded to a millionth of a dollar so sums never show binary fractions like 0.30000000000000004. */
export function roundUsd(amount: number): number {
  return Number(amount.toFixed(USD_DECIMALS));
}

export function imageCostUsd(width: number, height: number, steps: number): number {
  const megapixels = (width * height) / 1_000_000;
  return roundUsd(IMAGE_USD_PER_MEGAPIXEL_AT_DEFAULT_STEPS * megapixels * (steps / IMAGE_REFERENCE_STEPS));
}

export function videoCostUsd(seconds: number, tier: VideoTier): number {
  return roundUsd(VIDEO_USD_PER_SECOND_BY_TIER[tier] * seconds);
}

export function sumUsd(amounts: number[]): number {
  return roundUsd(amounts.reduce((total, amount) => total + amount, 0));
}
