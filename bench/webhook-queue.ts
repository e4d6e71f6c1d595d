// How fast the webhook queue turns events into deliveries: N job ends told at once to one replica's
// webhook service, each delivered to a loopback receiver that answers 204 at once, on the memory store,
// a single Redis and a three-master Redis Cluster (BullMQ). Prints events per second from the first
// event told to the last delivery received, and the time to tell them all (the tracker waits on that).
// Run: npm exec -- node bench/webhook-queue.ts [N]
import { randomUUID } from 'node:crypto';
import { startRedisCluster, startRedisServer } from '../test/support/redis-server.ts';
import { waitFor } from '../test/support/wait-for.ts';
import { startReceiver } from '../test/webhooks/support/receiver.ts';
import { openTestService, settlement, tenantWith } from '../test/webhooks/support/service-harness.ts';

const events = Number(process.argv[2] ?? 2_000);
const redis = await startRedisServer();
const cluster = await startRedisCluster();
const stores = [
  ['memory', {}],
  ['redis', { redisUrl: redis.url }],
  ['redis cluster', { redisNodes: cluster.nodes }],
] as const;

for (const [name, store] of stores) {
  const receiver = await startReceiver();
  const webhooks = await openTestService({
    ...store,
    tenants: [tenantWith('team-a', [{ id: 'done', url: `${receiver.origin}/hook` }])],
    webhooks: { concurrencyPerDestination: 64 },
  });
  const started = performance.now();
  await Promise.all(
    Array.from({ length: events }, () => webhooks.onJobEnded(settlement('team-a', randomUUID()))),
  );
  const told = performance.now();
  await waitFor('every delivery', () => receiver.requests.length >= events, 300_000);
  const done = performance.now();
  process.stdout.write(
    `${name.padEnd(14)} ${events} events: told in ${Math.round(told - started)} ms, ` +
      `delivered at ${Math.round((events / (done - started)) * 1000)}/s\n`,
  );
  await webhooks.close();
  await receiver.close();
}
await Promise.all([redis.stop(), cluster.stop()]);
