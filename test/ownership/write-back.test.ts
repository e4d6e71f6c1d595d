// Regression: after a fail-open outage, every answer to an id claimed during the outage used to start a
// write-back pass of its own over every unsynced id, so N answers landing as the store came back wrote
// about N × N records. Now one write-back runs at a time, and an answer that lands while its pending
// claim is being written is written too. Against a real Redis, with the breaker driven by the test.
import { randomUUID } from 'node:crypto';
import { expect, test } from 'vitest';
import { createRedisOwnershipStore } from '../../src/store/redis/ownership-store.ts';
import { createStoreCalls } from '../../src/store/redis/store-calls.ts';
import type { OwnershipStore } from '../../src/ownership/store.ts';
import { createStoreBreaker, type StoreBreaker } from '../../src/store/redis/circuit-breaker.ts';
import { useGatewayRedis } from '../support/gateway-redis.ts';
import { waitFor } from '../support/wait-for.ts';

const IDS_CLAIMED_DURING_OUTAGE = 100;
const RESPONSE = {
  status: 200,
  contentType: 'application/json',
  body: Buffer.from('{"status":200,"data":{"requestId":"x"}}'),
};
const silent = { info: () => undefined, warn: () => undefined };

const gatewayRedis = useGatewayRedis();

/** Script calls Redis has run so far (EVAL and EVALSHA). */
async function scriptCalls(): Promise<number> {
  const stats = await gatewayRedis.inspector.info('commandstats');
  let calls = 0;
  for (const match of stats.matchAll(/^cmdstat_(?:eval|evalsha):calls=(\d+)/gm)) calls += Number(match[1]);
  return calls;
}

function storeWithBreaker(probe: () => Promise<void>): { store: OwnershipStore; breaker: StoreBreaker } {
  const breaker = createStoreBreaker({ probe, probeIntervalMs: 1 });
  const calls = createStoreCalls(gatewayRedis.connection, {
    breaker,
    commandTimeoutMs: 2_000,
    failMode: 'open',
    logger: silent,
  });
  const store = createRedisOwnershipStore(calls, { ttlMs: 3_600_000 });
  return { store, breaker };
}

test('answers landing as the store comes back: each id written back about once, its answer kept', async () => {
  let storeAnswers: () => void = () => undefined;
  const storeIsBack = new Promise<void>((resolve) => {
    storeAnswers = resolve;
  });
  const { store, breaker } = storeWithBreaker(() => storeIsBack);
  // The store "fails": claims are made on this replica and wait to be written back.
  breaker.trip();
  const ids = Array.from({ length: IDS_CLAIMED_DURING_OUTAGE }, () => randomUUID());
  for (const id of ids) expect(await store.claim(id, 'alpha')).toEqual({ kind: 'claimed' });
  const callsBefore = await scriptCalls();

  // The answers land the moment the breaker closes, while the write-back of the claims has just begun.
  const answered = new Promise<void>((resolve, reject) => {
    breaker.onChange((open) => {
      if (!open)
        Promise.all(ids.map((id) => store.complete(id, 'alpha', RESPONSE))).then(() => {
          resolve();
        }, reject);
    });
  });
  storeAnswers();
  await answered;
  await waitFor('every answer written back', async () => {
    const values = await gatewayRedis.inspector.mget(ids.map((id) => `gengate:request:${id}`));
    return values.every((value) => value?.startsWith('alpha {"status":200,') === true);
  });

  // One write per id, plus a second one for an id whose answer landed while its claim was being written.
  expect((await scriptCalls()) - callsBefore).toBeLessThanOrEqual(2 * IDS_CLAIMED_DURING_OUTAGE);
  breaker.stop();
  await store.close();
});
