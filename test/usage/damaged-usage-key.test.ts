// A usage hash damaged (its key holds another type, written by something else sharing the key space):
// Redis refuses that tenant's writes and reads, and says so. The store is up, so the breaker, which every
// tenant's requests share, stays closed; the refused increments wait for the next flush, and the read
// answers 503 store_unavailable for that tenant alone. Against a real Redis.
import { expect, test } from 'vitest';
import { createStoreBreaker } from '../../src/store/redis/circuit-breaker.ts';
import { createStoreCalls } from '../../src/store/redis/store-calls.ts';
import { createRedisUsageMeter } from '../../src/store/redis/usage-meter.ts';
import { useGatewayRedis } from '../support/gateway-redis.ts';

const gatewayRedis = useGatewayRedis();
const silent = { info: () => undefined, warn: () => undefined };

test('a usage key of another type: refused for its tenant, the breaker stays closed', async () => {
  const breaker = createStoreBreaker({ probe: () => Promise.resolve(), probeIntervalMs: 60_000 });
  const calls = createStoreCalls(gatewayRedis.connection, {
    breaker,
    commandTimeoutMs: 2_000,
    failMode: 'open',
    logger: silent,
  });
  const meter = createRedisUsageMeter(calls, { flushIntervalMs: 3_600_000 });
  await gatewayRedis.inspector.set('gengate:{tenant:damaged}:usage:lifetime', 'not a hash');
  const now = Date.now();
  meter.record('damaged', { kind: 'request', route: 'account.usage' }, now);
  meter.record('healthy', { kind: 'request', route: 'account.usage' }, now);
  try {
    await expect(meter.report('damaged', now)).rejects.toMatchObject({ code: 'store_unavailable' });
    await meter.close();
    expect(breaker.open).toBe(false);
    // The healthy tenant's increment was written; the damaged one's lifetime hash is still what it was.
    expect(
      await gatewayRedis.inspector.hget('gengate:{tenant:healthy}:usage:lifetime', 'requests.account.usage'),
    ).toBe('1');
    expect(await gatewayRedis.inspector.get('gengate:{tenant:damaged}:usage:lifetime')).toBe('not a hash');
  } finally {
    breaker.stop();
  }
});
