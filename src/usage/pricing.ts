// Price estimates for what the gateway forwards. The service publishes video prices only
// (per second, by resolution tier, see docs/usage.md); image requests are estimated at zero
// and their real cost arrives with the polled record's `totalCost`.
import type { VideoTier } from '../maxai/schemas.ts';

const VIDEO_USD_PER_SECOND_BY_TIER: Record<VideoTier, number> = {
  '480p': 0.0062,
  '720p': 0.014,
  '1080p': 0.031,
};

// The service's default video size is not published; the cheapest tier keeps the estimate a floor.
const DEFAULT_VIDEO_TIER = '480p';

export function estimateVideoCostUsd(seconds: number, tier: VideoTier | undefined): number {
  return seconds * VIDEO_USD_PER_SECOND_BY_TIER[tier ?? DEFAULT_VIDEO_TIER];
}
