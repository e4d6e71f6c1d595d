// Usage shared by every replica through Redis hashes, one per tenant and period. Recording never touches
// the store on the request path: each replica adds up its increments and flushes them every second, so
// a tenant's usage view is at most about a second behind, and a store outage loses nothing that was not
// yet flushed when the replica stops. A reported cost is counted once per request id across replicas.
import { gatewayError } from '../../errors/registry.ts';
import {
  addEvent,
  addFields,
  addToField,
  countersFromFields,
  periodKeys,
  utcMonth,
  type OnReportedCostCounted,
  type UsageFields,
  type UsageMeter,
} from '../../usage/meter.ts';
import { isReplyError } from './connection.ts';
import { countCostOnceScript } from './scripts.ts';
import type { StoreCalls } from './store-calls.ts';
import { usageKey } from './keys.ts';

const DEFAULT_USAGE_FLUSH_INTERVAL_MS = 1_000;
// Month hashes outlive their month long enough for a yearly review; the lifetime hash is refreshed on
// every write, so it only expires for a tenant idle for that long.
const USAGE_TTL_SECONDS = 400 * 24 * 3600;
// A record polled again after this long would be counted twice; polls come within days, not months.
const COST_ONCE_TTL_SECONDS = 35 * 24 * 3600;
// While the store is unreachable, reported costs wait in memory up to this many; beyond, the oldest go.
const MAX_PENDING_COSTS = 10_000;

interface PendingCost {
  tenantId: string;
  requestId: string;
  costMicroUsd: number;
  month: string;
}

export interface RedisUsageMeterOptions {
  /** Told of each cost this replica counted (the one replica that counted it, when several poll). */
  onReportedCostCounted?: OnReportedCostCounted;
  flushIntervalMs?: number;
}

function toFields(hash: Record<string, string>): UsageFields {
  return new Map(Object.entries(hash).map(([field, value]) => [field, Number(value)]));
}

export function createRedisUsageMeter(calls: StoreCalls, options: RedisUsageMeterOptions = {}): UsageMeter {
  const keysOf = periodKeys(usageKey);
  // Not yet flushed: increments by Redis key, and reported costs.
  let pending = new Map<string, UsageFields>();
  let pendingCosts: PendingCost[] = [];

  // A write that fails, or is not sent while the store fails, is kept for the next flush. Redis refusing
  // one (a usage key of another type) is that key's damage: the breaker, which every request shares,
  // stays closed, as it does for a read refused so.
  async function flush(): Promise<void> {
    const increments = pending;
    const costs = pendingCosts;
    pending = new Map();
    pendingCosts = [];
    const writes: Promise<unknown>[] = [];
    const write = (call: () => Promise<unknown>, keep: () => void) =>
      writes.push(calls.attempt('usage_flush', call, keep, isReplyError));
    for (const [key, fields] of increments) {
      // Every counter is a whole number (requests, images, seconds, micro-USD): Redis adds integers.
      for (const [field, delta] of fields) {
        write(
          () => calls.send('hincrby', [key, field, delta]),
          () => {
            addToField(pendingFieldsOf(key), field, delta);
          },
        );
      }
      write(
        () => calls.send('expire', [key, USAGE_TTL_SECONDS]),
        () => undefined,
      );
    }
    for (const cost of costs) {
      write(
        async () => {
          const counted = await calls.run(countCostOnceScript, {
            ...cost,
            markTtlSeconds: COST_ONCE_TTL_SECONDS,
            usageTtlSeconds: USAGE_TTL_SECONDS,
          });
          if (counted === 1) options.onReportedCostCounted?.(cost.tenantId, cost.costMicroUsd);
        },
        () => {
          if (pendingCosts.length < MAX_PENDING_COSTS) pendingCosts.push(cost);
        },
      );
    }
    await Promise.all(writes);
  }

  function pendingFieldsOf(key: string): UsageFields {
    let fields = pending.get(key);
    if (fields === undefined) pending.set(key, (fields = new Map<string, number>()));
    return fields;
  }

  const timer = setInterval(() => void flush(), options.flushIntervalMs ?? DEFAULT_USAGE_FLUSH_INTERVAL_MS);
  timer.unref();

  return {
    record(tenantId, event, nowMs) {
      if (event.kind === 'reportedCost') {
        if (pendingCosts.length < MAX_PENDING_COSTS) {
          pendingCosts.push({
            tenantId,
            requestId: event.requestId,
            costMicroUsd: event.costMicroUsd,
            month: utcMonth(nowMs),
          });
        }
        return;
      }
      for (const key of keysOf(tenantId, nowMs)) addEvent(pendingFieldsOf(key), event);
    },
    async report(tenantId, nowMs) {
      const month = utcMonth(nowMs);
      const keys = keysOf(tenantId, nowMs);
      // This replica's increments not yet flushed belong in the answer too: those pending when the read
      // is sent. A flush that starts while the read is in flight writes them behind it on the same
      // connection (a tenant's keys share one slot, so one node in a Cluster too): they are in these maps
      // and not in what the read returns; taken after the read, they would be in neither.
      const unflushed = keys.map((key) => pending.get(key));
      const stored = await calls.attempt(
        'usage_read',
        () => Promise.all(keys.map((key) => calls.send('hgetall', [key]) as Promise<Record<string, string>>)),
        () => {
          throw gatewayError('usage_store_unavailable', { headers: { 'retry-after': '1' } });
        },
        isReplyError,
      );
      const [currentMonth, lifetime] = stored.map((hash, index) => {
        const fields = toFields(hash);
        const increments = unflushed[index];
        if (increments !== undefined) addFields(fields, increments);
        return countersFromFields(fields);
      });
      if (currentMonth === undefined || lifetime === undefined) throw new Error('usage periods missing');
      return { month, currentMonth, lifetime };
    },
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}
