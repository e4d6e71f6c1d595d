// Deliveries end to end, on the memory store, a real Redis and a real Redis Cluster (BullMQ), to real receivers over real
// sockets: retried until the receiver is back, with the same webhook-id on every attempt and signatures
// the standardwebhooks verifier accepts; dead after the last attempt and redelivered by hand; 410
// disables the endpoint; a receiver that never answers holds only its own destination.
import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookService } from '../../src/webhooks/service.ts';
import {
  startRedisCluster,
  startRedisServer,
  type RedisCluster,
  type RedisServer,
} from '../support/redis-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { answerStatus, startReceiver, type Receiver } from './support/receiver.ts';
import {
  SECRET_A,
  completedRecord,
  openTestService,
  settlement,
  tenantWith,
} from './support/service-harness.ts';

let redis: RedisServer;
let cluster: RedisCluster;
beforeAll(async () => {
  [redis, cluster] = await Promise.all([startRedisServer(), startRedisCluster()]);
});
afterAll(async () => {
  await Promise.all([redis.stop(), cluster.stop()]);
});

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await Promise.all([redis, ...cluster.servers].map((server) => server.client().flushall()));
});

async function receiver(answer = answerStatus(204), port = 0): Promise<Receiver> {
  const started = await startReceiver('127.0.0.1', answer, port);
  closers.push(() => started.close());
  return started;
}

type StoreOptions = Pick<Parameters<typeof openTestService>[0], 'redisUrl' | 'redisNodes'>;
const STORES: [string, () => StoreOptions][] = [
  ['memory', () => ({})],
  ['redis', () => ({ redisUrl: redis.url })],
  ['redis cluster', () => ({ redisNodes: cluster.nodes })],
];

describe.each(STORES)('webhook deliveries (%s store)', (_kind, storeOptions) => {
  async function service(
    options: Omit<Parameters<typeof openTestService>[0], 'redisUrl' | 'redisNodes'>,
  ): Promise<WebhookService> {
    const opened = await openTestService({ ...options, ...storeOptions() });
    closers.push(() => opened.close());
    return opened;
  }

  it('a receiver down for a while gets every event once back, same webhook-id on every attempt, each signature verifying', async () => {
    // Down: nothing listens on the port yet; then up but failing; then answering.
    const placeholder = await startReceiver('127.0.0.1');
    const port = placeholder.port;
    await placeholder.close();
    const webhooks = await service({
      tenants: [tenantWith('team-a', [{ id: 'done', url: `http://127.0.0.1:${port}/hook` }])],
    });
    const requestIds = [randomUUID(), randomUUID(), randomUUID()];
    for (const requestId of requestIds) await webhooks.onJobEnded(settlement('team-a', requestId));
    await waitFor('an attempt to fail', async () =>
      (await webhooks.list('team-a', 10)).every((delivery) => delivery.attempts >= 1),
    );
    let failuresLeft = 3;
    const up = await receiver((_request, response) => {
      response.writeHead(failuresLeft-- > 0 ? 503 : 204).end();
    }, port);
    await waitFor(
      'every event delivered',
      () =>
        up.requests.filter((request) => request.headers['webhook-id'] !== undefined).length >= 6 &&
        new Set(up.requests.slice(3).map((r) => r.headers['webhook-id'])).size === 3,
      30_000,
    );

    const listed = await webhooks.list('team-a', 10);
    expect(listed.map((delivery) => delivery.requestId).sort()).toEqual([...requestIds].sort());
    const verifier = new Webhook(SECRET_A);
    for (const delivery of listed) {
      const received = up.requests.filter((request) => request.headers['webhook-id'] === delivery.id);
      expect(received.length).toBeGreaterThanOrEqual(1);
      for (const request of received) {
        const headers = {
          'webhook-id': String(request.headers['webhook-id']),
          'webhook-timestamp': String(request.headers['webhook-timestamp']),
          'webhook-signature': String(request.headers['webhook-signature']),
        };
        expect(() => verifier.verify(request.body, headers)).not.toThrow();
        expect(request.body).toBe(
          `{"type":"job.completed","timestamp":"2026-11-26T18:00:00.000Z","data":{"tenant":"team-a","requestId":"${delivery.requestId}","route":"images.create","record":${completedRecord(delivery.requestId)}}}`,
        );
      }
    }
    await waitFor('the list to show every delivery delivered', async () =>
      (await webhooks.list('team-a', 10)).every(
        (delivery) => delivery.nextAttemptAt === null && delivery.lastStatus === 204,
      ),
    );
    const final = await webhooks.list('team-a', 10);
    expect(final.every((delivery) => delivery.attempts >= 2 && !delivery.dead)).toBe(true);
  });

  it('after the last attempt a delivery is dead; redelivery sends it again with the same id; another tenant cannot touch it', async () => {
    let status = 500;
    const target = await receiver((_request, response) => {
      response.writeHead(status).end();
    });
    const webhooks = await service({
      tenants: [
        tenantWith('team-a', [{ id: 'done', url: `${target.origin}/hook` }]),
        tenantWith('team-b', [{ id: 'done', url: `${target.origin}/other` }]),
      ],
      webhooks: { retry: { firstDelayMs: 50, maxDelayMs: 100, giveUpAfterSeconds: 1 } },
    });
    const requestId = randomUUID();
    await webhooks.onJobEnded(settlement('team-a', requestId, 'failed'));
    await waitFor(
      'the delivery to be dead',
      async () => (await webhooks.list('team-a', 10))[0]?.dead === true,
      20_000,
    );
    const [dead] = await webhooks.list('team-a', 10);
    expect(dead).toMatchObject({
      webhookId: 'done',
      event: 'job.failed',
      requestId,
      lastStatus: 500,
      nextAttemptAt: null,
      dead: true,
    });
    const attemptsBefore = target.requests.length;
    expect(new Set(target.requests.map((request) => request.headers['webhook-id']))).toEqual(
      new Set([dead?.id]),
    );

    expect(await webhooks.redeliver('team-b', dead?.id ?? '')).toBe(false);
    expect(await webhooks.list('team-b', 10)).toEqual([]);
    status = 204;
    expect(await webhooks.redeliver('team-a', dead?.id ?? '')).toBe(true);
    await waitFor(
      'the redelivery',
      async () => (await webhooks.list('team-a', 10))[0]?.lastStatus === 204,
      20_000,
    );
    expect(target.requests.length).toBe(attemptsBefore + 1);
    expect(target.requests.at(-1)?.headers['webhook-id']).toBe(dead?.id);
    expect((await webhooks.list('team-a', 10))[0]).toMatchObject({
      dead: false,
      nextAttemptAt: null,
      attempts: attemptsBefore + 1,
    });
  });

  it('410 Gone disables the endpoint: later events to it are not sent', async () => {
    const gone = await receiver(answerStatus(410));
    const webhooks = await service({
      tenants: [tenantWith('team-a', [{ id: 'done', url: `${gone.origin}/hook` }])],
    });
    await webhooks.onJobEnded(settlement('team-a', randomUUID()));
    await waitFor('the 410', async () => (await webhooks.list('team-a', 10))[0]?.dead === true);
    await webhooks.onJobEnded(settlement('team-a', randomUUID(), 'cancelled'));
    await waitFor('the second delivery to finish', async () =>
      (await webhooks.list('team-a', 10)).every((d) => d.dead),
    );
    expect(gone.requests).toHaveLength(1);
    expect(
      (await webhooks.list('team-a', 10)).map((d) => [d.event, d.attempts, d.lastStatus, d.dead]),
    ).toEqual([
      ['job.cancelled', 0, 410, true],
      ['job.completed', 1, 410, true],
    ]);
  });

  it('a receiver that never answers holds only its own destination: another tenant is delivered meanwhile', async () => {
    const silent = await receiver(() => undefined);
    const healthy = await receiver();
    const webhooks = await service({
      tenants: [
        tenantWith('team-slow', [{ id: 'done', url: `${silent.origin}/hook` }]),
        tenantWith('team-b', [{ id: 'done', url: `${healthy.origin}/hook` }]),
      ],
      webhooks: { timeoutMs: 60_000, concurrencyPerDestination: 2 },
    });
    for (let index = 0; index < 20; index += 1)
      await webhooks.onJobEnded(settlement('team-slow', randomUUID()));
    await waitFor('the silent receiver to hold its share', () => silent.requests.length === 2);
    await webhooks.onJobEnded(settlement('team-b', randomUUID()));
    await waitFor('the other tenant delivered', () => healthy.requests.length === 1);
    expect(silent.requests).toHaveLength(2);
  });
});
