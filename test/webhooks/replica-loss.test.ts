// A replica SIGKILLed while deliveries are pending and in flight: another replica sharing the Redis
// delivers every one of them, each with the id its first attempt carried; none is lost.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { deliveryIdOf } from '../../src/webhooks/service.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { startReceiver } from './support/receiver.ts';
import { openTestService, settlement, tenantWith } from './support/service-harness.ts';

const REPLICA = fileURLToPath(new URL('./support/replica.ts', import.meta.url));
const LOCK_DURATION_MS = 1_000;

let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedisServer();
});
afterAll(async () => {
  await redis.stop();
});

it('a replica killed mid-delivery loses nothing: the other replica delivers every event with the same ids', async () => {
  let hanging = true;
  const delivered = new Set<string>();
  const receiver = await startReceiver('127.0.0.1', (request, response) => {
    if (hanging) return;
    delivered.add(String(request.headers['webhook-id']));
    response.writeHead(204).end();
  });
  const requestIds = Array.from({ length: 8 }, () => randomUUID());
  const expectedIds = requestIds.map((requestId) =>
    deliveryIdOf('team-a', 'done', requestId, 'job.completed'),
  );
  const url = `${receiver.origin}/hook`;
  const doomed = spawn(
    process.execPath,
    [REPLICA, JSON.stringify({ redisUrl: redis.url, url, lockDurationMs: LOCK_DURATION_MS, requestIds })],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const exited = once(doomed, 'exit');
  let ready = false;
  doomed.stdout.on('data', (chunk: Buffer) => {
    ready ||= chunk.toString().includes('ready');
  });
  await waitFor('the first replica to queue every event', () => ready, 30_000);
  // Four attempts in flight (its share of the destination), four more pending behind them.
  // At least: on a slow machine their 2 s timeout may pass before the kill, and retries follow.
  await waitFor('the first replica to have attempts in flight', () => receiver.requests.length >= 4, 30_000);
  const inFlightIds = receiver.requests.slice(0, 4).map((request) => String(request.headers['webhook-id']));
  doomed.kill('SIGKILL');
  await exited;
  hanging = false;

  const survivor = await openTestService({
    redisUrl: redis.url,
    lockDurationMs: LOCK_DURATION_MS,
    tenants: [tenantWith('team-a', [{ id: 'done', url }])],
  });
  try {
    await waitFor(
      'every event delivered by the survivor',
      () => delivered.size === expectedIds.length,
      30_000,
    );
    expect([...delivered].sort()).toEqual([...expectedIds].sort());
    expect(expectedIds).toEqual(expect.arrayContaining(inFlightIds));
    await waitFor('the list to show them delivered', async () =>
      (await survivor.list('team-a', 20)).every((delivery) => delivery.lastStatus === 204),
    );
  } finally {
    await survivor.close();
    await receiver.close();
  }
}, 90_000);

it('Redis killed and restarted under the queue: the replica lives on and delivers what is queued after', async () => {
  const receiver = await startReceiver('127.0.0.1');
  const webhooks = await openTestService({
    redisUrl: redis.url,
    tenants: [tenantWith('team-a', [{ id: 'done', url: `${receiver.origin}/hook` }])],
  });
  try {
    await redis.kill();
    await new Promise((resolve) => setTimeout(resolve, 500));
    await redis.restart();
    const requestId = randomUUID();
    await waitFor(
      'the queue to take an event again',
      () =>
        webhooks.onJobEnded(settlement('team-a', requestId)).then(
          () => true,
          () => false,
        ),
      30_000,
    );
    await waitFor('the delivery', () => receiver.requests.length === 1, 30_000);
  } finally {
    await webhooks.close();
    await receiver.close();
  }
}, 90_000);
