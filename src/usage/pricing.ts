// What a create is expected to cost (docs/budgets.md), from its validated, policy-adjusted body: the amount
// admission reserves for it (src/jobs/reservation.ts) and the estimate its tenant's usage counts
// (./record.ts), one computation for both. Every amount is an integer of micro-USD: prices are converted
// once, when the configuration is read, and costs and budgets are then summed exactly (a budget of
// 50 × 0.01 admits exactly 50 creates, never 49 because fifty doubles summed to 0.5000000000000002).
import type { RouteId } from '../config/route-ids.ts';
import type { PricingConfig } from '../config/schema.ts';
import { firstMatchingGlob } from '../config/model-globs.ts';
import { requestedSamples, requestedVideoSeconds, requestedVideoTier } from '../maxai/request-values.ts';
import type { VideoTier } from '../maxai/schemas.ts';

const MICRO_USD_PER_USD = 1_000_000;
// The cheapest tier when a video names no size, as the service's default size is not published.
const DEFAULT_VIDEO_TIER: VideoTier = '480p';

/** A USD amount as whole micro-USD (prices and budgets have at most six decimals that count). */
export function toMicroUsd(usd: number): number {
  return Math.round(usd * MICRO_USD_PER_USD);
}

/** Micro-USD as USD, for answers and metrics: one division of an exact integer. */
export function toUsd(microUsd: number): number {
  return microUsd / MICRO_USD_PER_USD;
}

export interface Prices {
  imageGlobs: readonly string[];
  microUsdPerSampleByGlob: ReadonlyMap<string, number>;
  microUsdPerVideoSecond: Readonly<Record<VideoTier, number>>;
}

export function compilePrices(pricing: PricingConfig): Prices {
  const microUsdPerSampleByGlob = new Map<string, number>();
  // The first entry for a glob wins, as the lookup takes the first match.
  for (const { model, usdPerSample } of pricing.images) {
    if (!microUsdPerSampleByGlob.has(model)) microUsdPerSampleByGlob.set(model, toMicroUsd(usdPerSample));
  }
  const video = pricing.videoUsdPerSecond;
  return {
    imageGlobs: pricing.images.map((price) => price.model),
    microUsdPerSampleByGlob,
    microUsdPerVideoSecond: {
      '480p': toMicroUsd(video['480p']),
      '720p': toMicroUsd(video['720p']),
      '1080p': toMicroUsd(video['1080p']),
    },
  };
}

/**
 * The expected cost of a create, micro-USD; undefined when no `pricing.images` entry matches its model
 * (the configuration check refuses that for a tenant with a budget). `*` also matches a request without
 * model.
 */
export function expectedCostMicroUsd(
  prices: Prices,
  route: Extract<RouteId, 'images.create' | 'videos.create'>,
  body: Record<string, unknown> | undefined,
): number | undefined {
  if (route === 'videos.create') {
    const tier = requestedVideoTier(body) ?? DEFAULT_VIDEO_TIER;
    return requestedVideoSeconds(body) * prices.microUsdPerVideoSecond[tier];
  }
  const model = body?.model;
  const glob =
    typeof model === 'string'
      ? firstMatchingGlob(prices.imageGlobs, model)
      : prices.imageGlobs.find((candidate) => candidate === '*');
  const perSample = glob === undefined ? undefined : prices.microUsdPerSampleByGlob.get(glob);
  return perSample === undefined ? undefined : requestedSamples(body) * perSample;
}
