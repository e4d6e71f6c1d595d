// A gateway replica's webhook side in a process of its own, so a test can SIGKILL it mid-delivery.
// argv[2]: JSON { redisUrl, url, lockDurationMs, requestIds }: it opens the service on that Redis with one
// tenant whose webhook posts to `url`, reports each job in `requestIds` as completed, prints "ready" and
// keeps delivering until it is killed.
import { openTestService, settlement, tenantWith } from './service-harness.ts';

const { redisUrl, url, lockDurationMs, requestIds } = JSON.parse(process.argv[2] ?? '{}') as {
  redisUrl: string;
  url: string;
  lockDurationMs: number;
  requestIds: string[];
};
const webhooks = await openTestService({
  redisUrl,
  lockDurationMs,
  tenants: [tenantWith('team-a', [{ id: 'done', url }])],
});
for (const requestId of requestIds) await webhooks.onJobEnded(settlement('team-a', requestId));
process.stdout.write('ready\n');
setInterval(() => undefined, 60_000);
