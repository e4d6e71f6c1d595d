// Regression: a usage report added this replica's unflushed increments after its read of Redis had
// answered. A flush that started while the read was in flight had by then moved those increments out
// of memory and written them after the read, so the report counted them nowhere (seen in CI as a
// tenant's own earlier `account.usage` reads missing from its report). Against a real Redis.
import { expect, test } from 'vitest';
import { createStoreBreaker } from '../../src/store/redis/circuit-breaker.ts';
import { createStoreCalls } from '../../src/store/redis/store-calls.ts';
import { createRedisUsageMeter } from '../../src/store/redis/usage-meter.ts';
import { useGatewayRedis } from '../support/gateway-redis.ts';

const gatewayRedis = useGatewayRedis();

// Flushes only when closed: no timer flushes during the test.
const meterFlushedOnClose = () =>
  createRedisUsageMeter(
    createStoreCalls(gatewayRedis.connection, {
      breaker: createStoreBreaker({ probe: () => Promise.resolve(), probeIntervalMs: 60_000 }),
      commandTimeoutMs: 2_000,
      failMode: 'open',
      logger: { info: () => undefined, warn: () => undefined },
    }),
    { flushIntervalMs: 3_600_000 },
  );

test('a report read while this replica flushes counts each increment exactly once', async () => {
  const meter = meterFlushedOnClose();
  const now = Date.now();
  meter.record('alpha', { kind: 'request', route: 'account.usage' }, now);
  meter.record('alpha', { kind: 'images', count: 2, estimatedCostMicroUsd: 20_000 }, now);

  // The report's read is on the wire first; close() flushes behind it on the same connection.
  const reading = meter.report('alpha', now);
  await meter.close();
  const report = await reading;

  const expected = {
    requests: { 'account.usage': 1 },
    imagesRequested: 2,
    videosRequested: 0,
    videoSecondsRequested: 0,
    reportedCostUsd: 0,
    estimatedCostUsd: 0.02,
  };
  expect(report.currentMonth).toEqual(expected);
  expect(report.lifetime).toEqual(expected);
  // And once flushed, a fresh read finds the same in Redis alone.
  const afterFlush = meterFlushedOnClose();
  expect((await afterFlush.report('alpha', now)).lifetime).toEqual(expected);
  await afterFlush.close();
});
