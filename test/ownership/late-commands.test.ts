// The two guards that keep a store command the gateway gave up on from taking effect (decision 0024),
// each on its own against a real Redis: a claim that reaches Redis past its deadline changes nothing, and
// undoing an attempt removes its claim and refunds its charge only while the id still holds that
// attempt's record, never a claim made since.
import { randomUUID } from 'node:crypto';
import { expect, test } from 'vitest';
import { createRedisOwnershipStore } from '../../src/store/redis/ownership-store.ts';
import { undoClaimScript } from '../../src/store/redis/scripts.ts';
import { createStoreCalls } from '../../src/store/redis/store-calls.ts';
import { createStoreBreaker } from '../../src/store/redis/circuit-breaker.ts';
import { createStoreClock, microsOfTime } from '../../src/store/redis/store-clock.ts';
import { useGatewayRedis } from '../support/gateway-redis.ts';

const silent = { info: () => undefined, warn: () => undefined };
const LIMIT = { id: 'requests', limit: 10, windowSeconds: 3600, cost: 1 };

const gatewayRedis = useGatewayRedis();

test('a claim that reaches the store after its deadline claims nothing', async () => {
  const clock = createStoreClock();
  // As if the store's clock were 10 s ahead of what it is: every deadline is already past there.
  clock.observe(
    microsOfTime((await gatewayRedis.connection.time()) as unknown as [string, string]) - 10_000_000,
  );
  const breaker = createStoreBreaker({
    probe: () => Promise.reject(new Error('down')),
    probeIntervalMs: 60_000,
  });
  const calls = createStoreCalls(gatewayRedis.connection, {
    breaker,
    commandTimeoutMs: 2_000,
    failMode: 'closed',
    logger: silent,
    clock,
  });
  const store = createRedisOwnershipStore(calls, { ttlMs: 60_000 });
  const requestId = randomUUID();
  try {
    await expect(store.claim(requestId, 'alpha')).rejects.toMatchObject({ code: 'store_unavailable' });
    expect(await gatewayRedis.inspector.exists(`gengate:request:${requestId}`)).toBe(0);
  } finally {
    breaker.stop();
  }
});

test("undoing an attempt removes its claim and refunds its charge, and leaves anyone else's", async () => {
  const calls = createStoreCalls(gatewayRedis.connection, {
    breaker: createStoreBreaker({ probe: () => Promise.resolve(), probeIntervalMs: 60_000 }),
    commandTimeoutMs: 2_000,
    failMode: 'closed',
    logger: silent,
  });
  const undoClaim = (requestId: string, tenantId: string, record: string, limits: (typeof LIMIT)[]) =>
    calls.run(undoClaimScript, { requestId, tenantId, record, limits });
  const limitKey = 'gengate:{tenant:alpha}:limit:requests';
  const [undone, since] = [randomUUID(), randomUUID()];
  // Two charged claims, as the admission script leaves them: 2 units of 10 used.
  const nowMicros = microsOfTime((await gatewayRedis.connection.time()) as unknown as [string, string]);
  const twoUnitsMicros = 2 * 360_000_000;
  await gatewayRedis.inspector.set(limitKey, `${nowMicros + twoUnitsMicros}:0`, 'PX', 3_600_000);
  await gatewayRedis.inspector.set(`gengate:request:${undone}`, 'alpha ~attempt.1', 'PX', 60_000);
  await gatewayRedis.inspector.set(`gengate:request:${since}`, 'alpha ~attempt.3', 'PX', 60_000);

  // An older attempt on `since` (its record was replaced by a later attempt's): nothing happens.
  expect(await undoClaim(since, 'alpha', 'alpha ~attempt.2', [LIMIT])).toBe(0);
  expect(await gatewayRedis.inspector.get(`gengate:request:${since}`)).toBe('alpha ~attempt.3');
  // The attempt that holds `undone`: its claim goes and one unit comes back.
  expect(await undoClaim(undone, 'alpha', 'alpha ~attempt.1', [LIMIT])).toBe(1);
  expect(await gatewayRedis.inspector.exists(`gengate:request:${undone}`)).toBe(0);
  const refunded = await gatewayRedis.inspector.get(limitKey);
  const [tat] = (refunded ?? '').split(':').map(Number);
  expect(Math.round(((tat ?? 0) - nowMicros) / 360_000_000)).toBe(1);
  // Sent again (the undo is retried after each recovery until it is answered): nothing more changes.
  expect(await undoClaim(undone, 'alpha', 'alpha ~attempt.1', [LIMIT])).toBe(0);
  expect(await gatewayRedis.inspector.get(limitKey)).toBe(refunded);
});
