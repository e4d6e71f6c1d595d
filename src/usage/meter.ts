// What each tenant used, as the gateway saw it (contract section 7, `account: gateway`), per calendar
// month (UTC) and for the tenant's lifetime. Usage is kept as flat counters (`field -> number`), which
// both meters store: in this process (store.kind memory) or in Redis hashes (src/usage/redis-meter.ts).
import type { RouteId } from '../config/route-ids.ts';

export interface UsageCounters {
  requests: Partial<Record<RouteId, number>>;
  imagesRequested: number;
  videosRequested: number;
  videoSecondsRequested: number;
  /** Sum of `totalCost` of the tenant's finished records that it polled, each counted once. */
  reportedCostUsd: number;
  /** The gateway's estimate for what it forwarded (video prices only; see src/usage/pricing.ts). */
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
  /** Never waits: recording is off the request's critical path. */
  record(tenantId: string, event: UsageEvent, nowMs: number): void;
  report(tenantId: string, nowMs: number): Promise<UsageReport>;
  close(): Promise<void>;
}

/** Flat counters as stored: `requests.<route>`, `imagesRequested`, … */
export type UsageFields = Map<string, number>;

const REQUESTS_FIELD_PREFIX = 'requests.';
// Costs are sums of floats; six decimals is finer than any price the service publishes.
const COST_DECIMALS = 1e6;

// The label changes once a month and every metered request asks for it: remember the current month.
let currentMonth = { label: '', startMs: 0, endMs: 0 };

export function utcMonth(nowMs: number): string {
  if (nowMs < currentMonth.startMs || nowMs >= currentMonth.endMs) {
    const date = new Date(nowMs);
    currentMonth = {
      label: date.toISOString().slice(0, 7),
      startMs: Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1),
      endMs: Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1),
    };
  }
  return currentMonth.label;
}

/** The counter increments of one event (a reported cost's once-only rule is the meter's job). */
export function eventDeltas(event: UsageEvent): [field: string, delta: number][] {
  switch (event.kind) {
    case 'request':
      return [[`${REQUESTS_FIELD_PREFIX}${event.route}`, 1]];
    case 'images':
      return [
        ['imagesRequested', event.count],
        ['estimatedCostUsd', event.estimatedCostUsd],
      ];
    case 'video':
      return [
        ['videosRequested', 1],
        ['videoSecondsRequested', event.seconds],
        ['estimatedCostUsd', event.estimatedCostUsd],
      ];
    case 'reportedCost':
      return [['reportedCostUsd', event.costUsd]];
  }
}

export function addDeltas(fields: UsageFields, deltas: Iterable<[string, number]>): void {
  for (const [field, delta] of deltas) fields.set(field, (fields.get(field) ?? 0) + delta);
}

export function countersFromFields(fields: UsageFields): UsageCounters {
  const counters: UsageCounters = {
    requests: {},
    imagesRequested: fields.get('imagesRequested') ?? 0,
    videosRequested: fields.get('videosRequested') ?? 0,
    videoSecondsRequested: fields.get('videoSecondsRequested') ?? 0,
    reportedCostUsd: Math.round((fields.get('reportedCostUsd') ?? 0) * COST_DECIMALS) / COST_DECIMALS,
    estimatedCostUsd: Math.round((fields.get('estimatedCostUsd') ?? 0) * COST_DECIMALS) / COST_DECIMALS,
  };
  for (const [field, value] of fields) {
    if (field.startsWith(REQUESTS_FIELD_PREFIX)) {
      counters.requests[field.slice(REQUESTS_FIELD_PREFIX.length) as RouteId] = value;
    }
  }
  return counters;
}

/** The two counter sets an event adds to: its month's and the lifetime's. */
export function periodsOf(nowMs: number): [month: string, lifetime: string] {
  return [utcMonth(nowMs), 'lifetime'];
}

/** store.kind memory: one replica, usage lost on restart. */
export function createMemoryUsageMeter(): UsageMeter {
  const counters = new Map<string, UsageFields>();
  // Request ids whose reported cost was counted. Bounded by the requests this replica forwarded in its
  // lifetime, like the rest of the memory store, which is for a single replica and the demo.
  const costCounted = new Set<string>();
  const fieldsOf = (key: string) => {
    let fields = counters.get(key);
    if (fields === undefined) counters.set(key, (fields = new Map<string, number>()));
    return fields;
  };

  return {
    record(tenantId, event, nowMs) {
      if (event.kind === 'reportedCost') {
        const once = `${tenantId}\u0000${event.requestId}`;
        if (costCounted.has(once)) return;
        costCounted.add(once);
      }
      for (const period of periodsOf(nowMs))
        addDeltas(fieldsOf(`${tenantId}\u0000${period}`), eventDeltas(event));
    },
    report(tenantId, nowMs) {
      const month = utcMonth(nowMs);
      return Promise.resolve({
        month,
        currentMonth: countersFromFields(
          counters.get(`${tenantId}\u0000${month}`) ?? new Map<string, number>(),
        ),
        lifetime: countersFromFields(counters.get(`${tenantId}\u0000lifetime`) ?? new Map<string, number>()),
      });
    },
    close: () => Promise.resolve(),
  };
}
