// What each tenant used, as the gateway saw it (docs/usage.md, `account: gateway`), per calendar
// month (UTC) and for the tenant's lifetime. Usage is kept as flat counters (`field -> number`), which
// both meters store: in this process (src/store/memory/usage-meter.ts) or in Redis hashes
// (src/store/redis/usage-meter.ts).
import type { RouteId } from '../config/route-ids.ts';
import { toMicroUsd, toUsd } from './pricing.ts';

export interface UsageCounters {
  requests: Partial<Record<RouteId, number>>;
  imagesRequested: number;
  videosRequested: number;
  videoSecondsRequested: number;
  /** Sum of `totalCost` of the tenant's finished records that it polled, each counted once. */
  reportedCostUsd: number;
  /** The expected cost of the creates it forwarded, as admission reserves it (./pricing.ts). */
  estimatedCostUsd: number;
}

export type UsageEvent =
  | { kind: 'request'; route: RouteId }
  | { kind: 'images'; count: number; estimatedCostMicroUsd: number }
  | { kind: 'video'; seconds: number; estimatedCostMicroUsd: number }
  | { kind: 'reportedCost'; requestId: string; costMicroUsd: number };

export interface UsageReport {
  month: string;
  currentMonth: UsageCounters;
  lifetime: UsageCounters;
}

/** Told each time a meter counts a reported cost (once per record, whoever polls it how often). */
export type OnReportedCostCounted = (tenantId: string, costMicroUsd: number) => void;

export interface UsageMeter {
  /** Never waits: recording is off the request's critical path. */
  record(tenantId: string, event: UsageEvent, nowMs: number): void;
  report(tenantId: string, nowMs: number): Promise<UsageReport>;
  close(): Promise<void>;
}

/** Flat counters as stored: `requests.<route>`, `imagesRequested`, … */
export type UsageFields = Map<string, number>;

const REQUESTS_FIELD_PREFIX = 'requests.';
// Costs are summed exactly, as integers of micro-USD like every amount of ./pricing.ts.
const REPORTED_COST_FIELD = 'reportedCostMicroUsd';
const ESTIMATED_COST_FIELD = 'estimatedCostMicroUsd';
// Where each cost was kept before, in USD as a sum of floats: a store written then still counts it.
const LEGACY_USD_FIELDS = { reported: 'reportedCostUsd', estimated: 'estimatedCostUsd' } as const;

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

export function addToField(fields: UsageFields, field: string, delta: number): void {
  fields.set(field, (fields.get(field) ?? 0) + delta);
}

// `requests.<route>` for each route, built once: every served request adds to one.
const requestsFieldByRoute = new Map<RouteId, string>();

function requestsField(route: RouteId): string {
  let field = requestsFieldByRoute.get(route);
  if (field === undefined) requestsFieldByRoute.set(route, (field = `${REQUESTS_FIELD_PREFIX}${route}`));
  return field;
}

/** Adds one event's increments (a reported cost's once-only rule is the meter's job). */
export function addEvent(fields: UsageFields, event: UsageEvent): void {
  switch (event.kind) {
    case 'request':
      addToField(fields, requestsField(event.route), 1);
      return;
    case 'images':
      addToField(fields, 'imagesRequested', event.count);
      addToField(fields, ESTIMATED_COST_FIELD, event.estimatedCostMicroUsd);
      return;
    case 'video':
      addToField(fields, 'videosRequested', 1);
      addToField(fields, 'videoSecondsRequested', event.seconds);
      addToField(fields, ESTIMATED_COST_FIELD, event.estimatedCostMicroUsd);
      return;
    case 'reportedCost':
      addToField(fields, REPORTED_COST_FIELD, event.costMicroUsd);
      return;
  }
}

/** Adds every counter of `increments` to `fields`. */
export function addFields(fields: UsageFields, increments: UsageFields): void {
  for (const [field, delta] of increments) addToField(fields, field, delta);
}

function costUsdOf(fields: UsageFields, microUsdField: string, legacyUsdField: string): number {
  return toUsd((fields.get(microUsdField) ?? 0) + toMicroUsd(fields.get(legacyUsdField) ?? 0));
}

export function countersFromFields(fields: UsageFields): UsageCounters {
  const counters: UsageCounters = {
    requests: {},
    imagesRequested: fields.get('imagesRequested') ?? 0,
    videosRequested: fields.get('videosRequested') ?? 0,
    videoSecondsRequested: fields.get('videoSecondsRequested') ?? 0,
    reportedCostUsd: costUsdOf(fields, REPORTED_COST_FIELD, LEGACY_USD_FIELDS.reported),
    estimatedCostUsd: costUsdOf(fields, ESTIMATED_COST_FIELD, LEGACY_USD_FIELDS.estimated),
  };
  for (const [field, value] of fields) {
    if (field.startsWith(REQUESTS_FIELD_PREFIX)) {
      counters.requests[field.slice(REQUESTS_FIELD_PREFIX.length) as RouteId] = value;
    }
  }
  return counters;
}

const LIFETIME = 'lifetime';

/**
 * Where an event of a tenant is counted: its current month's counters and its lifetime's, as two keys
 * built by `keyOf(tenantId, period)`. The keys are remembered until the month changes, since every
 * metered request asks for them (two new strings per request otherwise).
 */
export function periodKeys(
  keyOf: (tenantId: string, period: string) => string,
): (tenantId: string, nowMs: number) => readonly [month: string, lifetime: string] {
  let month = '';
  let keysByTenant = new Map<string, readonly [string, string]>();
  return (tenantId, nowMs) => {
    const current = utcMonth(nowMs);
    if (current !== month) {
      month = current;
      keysByTenant = new Map();
    }
    let keys = keysByTenant.get(tenantId);
    if (keys === undefined) {
      keys = [keyOf(tenantId, current), keyOf(tenantId, LIFETIME)];
      keysByTenant.set(tenantId, keys);
    }
    return keys;
  };
}
