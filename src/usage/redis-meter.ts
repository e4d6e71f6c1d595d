// Usage shared by every replica through Redis hashes, one per tenant and period. Recording never touches
// the store on the request path: each replica adds up its increments and flushes them every second, so
// a tenant's usage view is at most about a second behind, and a store outage loses nothing that was not
// yet flushed when the replica stops. A reported cost is counted once per request id across replicas.
import type { FastifyBaseLogger } from 'fastify';
import { gatewayError } from '../errors/registry.ts';
import type { ObserveStore } from '../store/operations.ts';
import { defineScript, tenantKey, withDeadline, type RedisConnection } from '../store/redis.ts';
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
} from './meter.ts';

const DEFAULT_USAGE_FLUSH_INTERVAL_MS = 1_000;
// Month hashes outlive their month long enough for a yearly review; the lifetime hash is refreshed on
// every write, so it only expires for a tenant idle for that long.
const USAGE_TTL_SECONDS = 400 * 24 * 3600;
// A record polled again after this long would be counted twice; polls come within days, not months.
const COST_ONCE_TTL_SECONDS = 35 * 24 * 3600;
// While the store is unreachable, reported costs wait in memory up to this many; beyond, the oldest go.
const MAX_PENDING_COSTS = 10_000;

const COUNT_COST_ONCE = `
if redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[2]) then
  for i = 2, 3 do
    redis.call('HINCRBYFLOAT', KEYS[i], 'reportedCostUsd', ARGV[1])
    redis.call('EXPIRE', KEYS[i], ARGV[3])
  end
  return 1
end
return 0`;

interface PendingCost {
  tenantId: string;
  requestId: string;
  costUsd: number;
  month: string;
}

export interface RedisUsageMeterOptions {
  connection: RedisConnection;
  commandTimeoutMs: number;
  logger: Pick<FastifyBaseLogger, 'warn'>;
  observeStore?: ObserveStore;
  /** Told of each cost this replica counted (the one replica that counted it, when several poll). */
  onReportedCostCounted?: OnReportedCostCounted;
  flushIntervalMs?: number;
}

const usageKey = (tenantId: string, period: string) => tenantKey(tenantId, `usage:${period}`);

function toFields(hash: Record<string, string>): UsageFields {
  return new Map(Object.entries(hash).map(([field, value]) => [field, Number(value)]));
}

export function createRedisUsageMeter(options: RedisUsageMeterOptions): UsageMeter {
  const { connection, commandTimeoutMs, logger } = options;
  const keysOf = periodKeys(usageKey);
  const countCostOnce = defineScript(connection, 'gengateCountCostOnce', COUNT_COST_ONCE);
  // Not yet flushed: increments by Redis key, and reported costs.
  let pending = new Map<string, UsageFields>();
  let pendingCosts: PendingCost[] = [];
  let failing = false;

  function noteFailure(error: unknown): void {
    options.observeStore?.('usage_flush', 0, true);
    if (!failing) logger.warn({ err: (error as Error).message }, 'usage flush failed; keeping increments');
    failing = true;
  }

  async function flush(): Promise<void> {
    const increments = pending;
    const costs = pendingCosts;
    pending = new Map();
    pendingCosts = [];
    const writes: Promise<unknown>[] = [];
    for (const [key, fields] of increments) {
      for (const [field, delta] of fields) {
        writes.push(
          withDeadline(connection.hincrbyfloat(key, field, delta), commandTimeoutMs).catch(
            (error: unknown) => {
              noteFailure(error);
              addToField(pendingFieldsOf(key), field, delta);
            },
          ),
        );
      }
      writes.push(
        withDeadline(connection.expire(key, USAGE_TTL_SECONDS), commandTimeoutMs).catch(noteFailure),
      );
    }
    for (const cost of costs) {
      const keys = [
        tenantKey(cost.tenantId, `usage-cost-counted:${cost.requestId}`),
        usageKey(cost.tenantId, cost.month),
        usageKey(cost.tenantId, 'lifetime'),
      ];
      writes.push(
        withDeadline(
          countCostOnce(keys.length, ...keys, cost.costUsd, COST_ONCE_TTL_SECONDS, USAGE_TTL_SECONDS),
          commandTimeoutMs,
        ).then(
          (counted) => {
            if (counted === 1) options.onReportedCostCounted?.(cost.tenantId, cost.costUsd);
          },
          (error: unknown) => {
            noteFailure(error);
            if (pendingCosts.length < MAX_PENDING_COSTS) pendingCosts.push(cost);
          },
        ),
      );
    }
    const results = await Promise.allSettled(writes);
    if (results.every((result) => result.status === 'fulfilled') && pending.size === 0) failing = false;
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
            costUsd: event.costUsd,
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
      let stored: Record<string, string>[];
      const started = performance.now();
      try {
        stored = await withDeadline(
          Promise.all(keys.map((key) => connection.hgetall(key))),
          commandTimeoutMs,
        );
        options.observeStore?.('usage_read', (performance.now() - started) / 1000, false);
      } catch (error) {
        options.observeStore?.('usage_read', (performance.now() - started) / 1000, true);
        throw gatewayError('usage_store_unavailable', {
          headers: { 'retry-after': '1' },
          cause: error,
        });
      }
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
