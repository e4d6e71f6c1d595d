// store.kind memory: usage counted in this process, for a single replica; lost on restart.
import {
  addEvent,
  countersFromFields,
  periodKeys,
  utcMonth,
  type OnReportedCostCounted,
  type UsageFields,
  type UsageMeter,
} from '../../usage/meter.ts';

export function createMemoryUsageMeter(onReportedCostCounted?: OnReportedCostCounted): UsageMeter {
  const counters = new Map<string, UsageFields>();
  // Request ids whose reported cost was counted. Bounded by the requests this replica forwarded in its
  // lifetime, like the rest of the memory store, which is for a single replica and the demo.
  const costCounted = new Set<string>();
  const keysOf = periodKeys((tenantId, period) => `${tenantId}\u0000${period}`);
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
        onReportedCostCounted?.(tenantId, event.costMicroUsd);
      }
      for (const key of keysOf(tenantId, nowMs)) addEvent(fieldsOf(key), event);
    },
    report(tenantId, nowMs) {
      const [monthKey, lifetimeKey] = keysOf(tenantId, nowMs);
      return Promise.resolve({
        month: utcMonth(nowMs),
        currentMonth: countersFromFields(counters.get(monthKey) ?? new Map<string, number>()),
        lifetime: countersFromFields(counters.get(lifetimeKey) ?? new Map<string, number>()),
      });
    },
    close: () => Promise.resolve(),
  };
}
