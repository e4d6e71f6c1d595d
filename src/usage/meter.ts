// What each tenant used, as the gateway saw it (contract section 7, `account: gateway`).
// Counted per calendar month (UTC) and for the tenant's lifetime. This implementation is per process;
// the shared-store implementation follows the same interface.
import type { RouteId } from '../config/route-ids.ts';

export interface UsageCounters {
  requests: Partial<Record<RouteId, number>>;
  imagesRequested: number;
  videosRequested: number;
  videoSecondsRequested: number;
  /** Sum of `totalCost` of the tenant's finished records that it polled, each counted once. */
  reportedCostUsd: number;
  /** The gateway's estimate for what it forwarded (see docs/usage.md for the price table). */
  estimatedCostUsd: number;
}

export type UsageEvent =
  | { kind: 'request'; route: RouteId }
  | { kind: 'images'; count: number; estimatedCostUsd: number }
  | { kind: 'video'; seconds: number; estimatedCostUsd: number }
  | { kind: 'reportedCost'; requestId: string; costUsd: number };

export interface UsageReport {
  month: string;
  currentMonth: UsageCounters;
  lifetime: UsageCounters;
}

export interface UsageMeter {
  record(tenantId: string, event: UsageEvent, nowMs: number): void;
  report(tenantId: string, nowMs: number): UsageReport;
}

function emptyCounters(): UsageCounters {
  return {
    requests: {},
    imagesRequested: 0,
    videosRequested: 0,
    videoSecondsRequested: 0,
    reportedCostUsd: 0,
    estimatedCostUsd: 0,
  };
}

function applyEvent(counters: UsageCounters, event: UsageEvent): void {
  switch (event.kind) {
    case 'request':
      counters.requests[event.route] = (counters.requests[event.route] ?? 0) + 1;
      return;
    case 'images':
      counters.imagesRequested += event.count;
      counters.estimatedCostUsd += event.estimatedCostUsd;
      return;
    case 'video':
      counters.videosRequested += 1;
      counters.videoSecondsRequested += event.seconds;
      counters.estimatedCostUsd += event.estimatedCostUsd;
      return;
    case 'reportedCost':
      counters.reportedCostUsd += event.costUsd;
      return;
  }
}

export function utcMonth(nowMs: number): string {
  return new Date(nowMs).toISOString().slice(0, 7);
}

export function createMemoryUsageMeter(): UsageMeter {
  const lifetime = new Map<string, UsageCounters>();
  const monthly = new Map<string, UsageCounters>();
  const costCounted = new Set<string>();

  function countersFor(map: Map<string, UsageCounters>, key: string): UsageCounters {
    let counters = map.get(key);
    if (counters === undefined) {
      counters = emptyCounters();
      map.set(key, counters);
    }
    return counters;
  }

  return {
    record(tenantId, event, nowMs) {
      if (event.kind === 'reportedCost') {
        const once = `${tenantId}\u0000${event.requestId}`;
        if (costCounted.has(once)) return;
        costCounted.add(once);
      }
      applyEvent(countersFor(lifetime, tenantId), event);
      applyEvent(countersFor(monthly, `${tenantId}\u0000${utcMonth(nowMs)}`), event);
    },
    report(tenantId, nowMs) {
      const month = utcMonth(nowMs);
      return {
        month,
        currentMonth: structuredClone(monthly.get(`${tenantId}\u0000${month}`) ?? emptyCounters()),
        lifetime: structuredClone(lifetime.get(tenantId) ?? emptyCounters()),
      };
    },
  };
}
