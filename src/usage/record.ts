// Turns one successful exchange into usage events: what was requested on creates, with the cost admission
// reserves for it, and the service's own `totalCost` when a tenant polls a finished record.
import type { RouteId } from '../config/route-ids.ts';
import { expectedCostMicroUsd, toMicroUsd, toUsd, type Prices } from './pricing.ts';
import { requestedSamples, requestedVideoSeconds } from '../maxai/request-values.ts';
import { readRecordSummary } from './record-summary.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import type { UsageEvent, UsageMeter } from './meter.ts';

function reportedCost(responseBody: Buffer): { requestId: string; costMicroUsd: number } | undefined {
  const { id, totalCost, completedAt } = readRecordSummary(responseBody);
  // Only a finished record's cost is final; counting earlier would count a partial figure.
  if (id === undefined || totalCost === undefined || completedAt === undefined) return undefined;
  const costMicroUsd = toMicroUsd(totalCost);
  // The upstream is an untrusted peer: a cost no counter can hold exactly is not counted.
  if (!Number.isSafeInteger(costMicroUsd) || costMicroUsd < 0) return undefined;
  return { requestId: id, costMicroUsd };
}

function usageEventsFor(
  prices: Prices,
  route: RouteId,
  requestBody: Record<string, unknown> | undefined,
  responseBody: Buffer,
): UsageEvent[] {
  switch (route) {
    case 'images.create':
    case 'videos.create': {
      // An image whose model matches no pricing.images entry is estimated at 0, as admission reserves it.
      const estimatedCostMicroUsd = expectedCostMicroUsd(prices, route, requestBody) ?? 0;
      return [
        route === 'images.create'
          ? { kind: 'images', count: requestedSamples(requestBody), estimatedCostMicroUsd }
          : { kind: 'video', seconds: requestedVideoSeconds(requestBody), estimatedCostMicroUsd },
      ];
    }
    case 'images.get':
    case 'videos.get': {
      const cost = reportedCost(responseBody);
      return cost === undefined ? [] : [{ kind: 'reportedCost', ...cost }];
    }
    default:
      return [];
  }
}

type RequestedUsageMetrics = Pick<
  GatewayMetrics,
  'usageImages' | 'usageVideoSeconds' | 'usageEstimatedCost' | 'usageReportedCost'
>;

/**
 * Meters one successful exchange: the tenant's usage view and the usage counters of /metrics. A reported
 * cost reaches /metrics from the meter, which alone knows whether the record was counted before. A create
 * is estimated with the prices admission reserves with (`prices`, compiled from the same `pricing`).
 */
export function recordExchangeUsage(
  meter: UsageMeter,
  metrics: RequestedUsageMetrics,
  prices: Prices,
  exchange: {
    tenantId: string;
    route: RouteId;
    requestBody: Record<string, unknown> | undefined;
    responseBody: Buffer;
  },
  nowMs: number,
): void {
  const { tenantId, route, requestBody, responseBody } = exchange;
  for (const event of usageEventsFor(prices, route, requestBody, responseBody)) {
    meter.record(tenantId, event, nowMs);
    if (event.kind === 'images') metrics.usageImages.labels(tenantId).inc(event.count);
    if (event.kind === 'video') metrics.usageVideoSeconds.labels(tenantId).inc(event.seconds);
    if (event.kind === 'images' || event.kind === 'video') {
      metrics.usageEstimatedCost.labels(tenantId).inc(toUsd(event.estimatedCostMicroUsd));
    }
  }
}
