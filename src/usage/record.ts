// Turns one successful exchange into usage events: what was requested on creates, and the service's
// own `totalCost` when a tenant polls a finished record.
import type { RouteId } from '../config/route-ids.ts';
import { requestedSamples, requestedVideoSeconds, requestedVideoTier } from '../maxai/request-values.ts';
import { estimateVideoCostUsd } from './pricing.ts';
import { readRecordSummary } from './record-summary.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import type { UsageEvent, UsageMeter } from './meter.ts';

function reportedCost(responseBody: Buffer): { requestId: string; costUsd: number } | undefined {
  const { id, totalCost, completedAt } = readRecordSummary(responseBody);
  // Only a finished record's cost is final; counting earlier would count a partial figure.
  if (id === undefined || totalCost === undefined || completedAt === undefined) return undefined;
  return { requestId: id, costUsd: totalCost };
}

function usageEventsFor(
  route: RouteId,
  requestBody: Record<string, unknown> | undefined,
  responseBody: Buffer,
): UsageEvent[] {
  switch (route) {
    case 'images.create':
      return [{ kind: 'images', count: requestedSamples(requestBody), estimatedCostUsd: 0 }];
    case 'videos.create': {
      const seconds = requestedVideoSeconds(requestBody);
      return [
        {
          kind: 'video',
          seconds,
          estimatedCostUsd: estimateVideoCostUsd(seconds, requestedVideoTier(requestBody)),
        },
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
 * cost reaches /metrics from the meter, which alone knows whether the record was counted before.
 */
export function recordExchangeUsage(
  meter: UsageMeter,
  metrics: RequestedUsageMetrics,
  exchange: {
    tenantId: string;
    route: RouteId;
    requestBody: Record<string, unknown> | undefined;
    responseBody: Buffer;
  },
  nowMs: number,
): void {
  for (const event of usageEventsFor(exchange.route, exchange.requestBody, exchange.responseBody)) {
    meter.record(exchange.tenantId, event, nowMs);
    if (event.kind === 'images') metrics.usageImages.labels(exchange.tenantId).inc(event.count);
    if (event.kind === 'video') metrics.usageVideoSeconds.labels(exchange.tenantId).inc(event.seconds);
    if (event.kind === 'images' || event.kind === 'video') {
      metrics.usageEstimatedCost.labels(exchange.tenantId).inc(event.estimatedCostUsd);
    }
  }
}

/** Creates the usage counters of a tenant at 0. */
export function startUsageCountersAtZero(metrics: RequestedUsageMetrics, tenantId: string): void {
  metrics.usageImages.labels(tenantId);
  metrics.usageVideoSeconds.labels(tenantId);
  metrics.usageEstimatedCost.labels(tenantId);
  metrics.usageReportedCost.labels(tenantId);
}
