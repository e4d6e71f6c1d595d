// docs/ownership.md#stores with store.kind redis: replicas sharing one Redis agree on who owns each request id,
// every record expires, and a failing store is handled per failMode without ever letting a tenant reach
// an id the gateway cannot tie to it.
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, test } from 'vitest';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { waitFor } from '../support/wait-for.ts';
import {
  STORE_UNAVAILABLE,
  callRequest,
  createImage,
  inUse,
  notFound,
  receivedCreates,
  submission,
} from './ownership-client.ts';

const SEVEN_DAYS_MS = 7 * 24 * 3600 * 1000;

let redis: RedisServer | undefined;
const harnesses: GatewayHarness[] = [];
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((harness) => harness.close()));
  await redis?.stop();
  redis = undefined;
});

async function startReplica(server: RedisServer, failMode: 'open' | 'closed' = 'open') {
  const harness = await startGatewayHarness({
    storeYaml: `{ kind: redis, failMode: ${failMode}, redis: { url: "${server.url}" } }`,
  });
  harnesses.push(harness);
  return harness;
}

test('two replicas on one Redis see each other’s ownership', async () => {
  redis = await startRedisServer();
  const [one, two] = [await startReplica(redis), await startReplica(redis)];
  const requestId = randomUUID();
  expect((await createImage(one, 'alpha', { requestId })).body).toEqual(submission(requestId));

  const replay = await createImage(two, 'alpha', { requestId });
  expect(replay.status).toBe(200);
  expect(replay.body).toEqual(submission(requestId));
  expect(replay.headers.get('idempotent-replayed')).toBe('true');
  const conflict = await createImage(two, 'gamma', { requestId });
  expect(conflict.status).toBe(409);
  expect(conflict.body).toEqual(inUse(requestId));
  const refused = await callRequest(two, 'gamma', 'GET', `/v1/images/generations/${requestId}`);
  expect(refused.status).toBe(404);
  expect(refused.body).toEqual(notFound(requestId));
  expect(two.simulator.received).toEqual([]);

  // The owner's poll is forwarded by either replica (this one's simulator never saw the job).
  expect((await callRequest(two, 'alpha', 'GET', `/v1/images/generations/${requestId}`)).status).toBe(404);
  expect(two.simulator.received.map((request) => request.url)).toEqual([
    `/v1/images/generations/${requestId}`,
  ]);
});

test('one key per request id, with a TTL of store.ownershipTtlSeconds', async () => {
  redis = await startRedisServer();
  const gateway = await startReplica(redis);
  const requestId = randomUUID();
  await createImage(gateway, 'alpha', { requestId });
  const client = redis.client();
  expect(await client.keys('gengate:request:*')).toEqual([`gengate:request:${requestId}`]);
  const ttl = await client.pttl(`gengate:request:${requestId}`);
  expect(ttl).toBeGreaterThan(SEVEN_DAYS_MS - 60_000);
  expect(ttl).toBeLessThanOrEqual(SEVEN_DAYS_MS);
  expect(await client.get(`gengate:request:${requestId}`)).toMatch(/^alpha \{"status":200,/);
});

describe('store failure', () => {
  test('fail-closed: creates and polls answer 503 store_unavailable and nothing is forwarded', async () => {
    redis = await startRedisServer();
    const gateway = await startReplica(redis, 'closed');
    const owned = randomUUID();
    await createImage(gateway, 'alpha', { requestId: owned });
    gateway.simulator.clearReceived();
    await redis.kill();

    const create = await createImage(gateway, 'alpha', { requestId: randomUUID() });
    expect(create.status).toBe(503);
    expect(create.headers.get('retry-after')).toBe('1');
    expect(create.body).toEqual(STORE_UNAVAILABLE);
    const poll = await callRequest(gateway, 'alpha', 'GET', `/v1/images/generations/${owned}`);
    expect(poll.status).toBe(503);
    expect(poll.body).toEqual(STORE_UNAVAILABLE);
    expect(gateway.simulator.received).toEqual([]);
  });

  test('fail-open: creates claim on the replica, unknown polls are refused, claims are written back', async () => {
    redis = await startRedisServer();
    const gateway = await startReplica(redis, 'open');
    const before = randomUUID();
    await createImage(gateway, 'alpha', { requestId: before });
    // The record of an answer is written after the answer leaves: wait for it, or the kill can beat it.
    const recorded = redis.client();
    await waitFor('the record of the answer', async () =>
      ((await recorded.get(`gengate:request:${before}`)) ?? '').startsWith('alpha {'),
    );
    await redis.kill();

    const during = randomUUID();
    expect((await createImage(gateway, 'alpha', { requestId: during })).body).toEqual(submission(during));
    const replay = await createImage(gateway, 'alpha', { requestId: during });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(receivedCreates(gateway).map((create) => create.body)).toEqual([
      `{"requestId":"${before}"}`,
      `{"requestId":"${during}"}`,
    ]);
    expect((await callRequest(gateway, 'alpha', 'GET', `/v1/images/generations/${during}`)).status).toBe(200);
    // Ownership nobody here can confirm is refused, never guessed.
    for (const [tenant, requestId] of [
      ['alpha', before],
      ['gamma', during],
    ] as const) {
      const refused = await callRequest(gateway, tenant, 'GET', `/v1/images/generations/${requestId}`);
      expect(refused.status).toBe(503);
      expect(refused.body).toEqual(STORE_UNAVAILABLE);
    }

    await redis.restart();
    const client = redis.client();
    await waitFor('the write-back', async () => (await client.get(`gengate:request:${during}`)) !== null);
    const other = await startReplica(redis, 'open');
    expect((await createImage(other, 'gamma', { requestId: during })).body).toEqual(inUse(during));
  });
});
