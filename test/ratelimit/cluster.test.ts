// A three-master Redis Cluster started by the test: one tenant's keys share a slot (no CROSSSLOT), and
// after SCRIPT FLUSH on every master the next check still works and charges exactly once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LimitRequest } from '../../src/ratelimit/types.ts';
import { startRedisCluster, type RedisCluster } from '../support/redis-server.ts';
import { startTestLimiter, type TestLimiter } from './limiter-support.ts';

// Day-long windows: a unit comes back only every few minutes, so the time a busy machine takes between
// two checks never shows in their remaining units (with 600 a minute it did past 100 ms).
const LIMITS: LimitRequest[] = [
  { id: 'images', limit: 120, windowSeconds: 86_400, cost: 4 },
  { id: 'requests', limit: 600, windowSeconds: 86_400, cost: 1 },
  { id: 'video-seconds', limit: 300, windowSeconds: 86_400, cost: 10 },
];
// Enough tenants that their hash tags land on every master.
const TENANTS = Array.from({ length: 30 }, (_, index) => `tenant-${index}`);

describe('Redis Cluster', () => {
  let cluster: RedisCluster;
  let replica: TestLimiter;

  beforeAll(async () => {
    cluster = await startRedisCluster();
    replica = await startTestLimiter({ nodes: cluster.nodes }, { failMode: 'closed' });
  });
  afterAll(async () => {
    await replica.close();
    await cluster.stop();
  });

  it('checks every tenant on every master without cross-slot errors', async () => {
    const decisions = await Promise.all(TENANTS.map((tenant) => replica.limiter.check(tenant, LIMITS)));
    for (const decision of decisions) expect(decision).toMatchObject({ outcome: 'admitted', exact: true });
    const keyCounts = await Promise.all(cluster.servers.map((server) => server.client().dbsize()));
    expect(keyCounts.every((count) => count > 0)).toBe(true);
    expect(keyCounts.reduce((sum, count) => sum + count, 0)).toBe(TENANTS.length * LIMITS.length);
  });

  it('after SCRIPT FLUSH on all masters the next check works and charges once', async () => {
    const before = await replica.limiter.check('flushed', LIMITS);
    await Promise.all(cluster.servers.map((server) => server.client().script('FLUSH')));
    const after = await replica.limiter.check('flushed', LIMITS);
    expect(after.outcome).toBe('admitted');
    expect(after.limits.map((state) => state.remaining)).toEqual(
      before.limits.map((state) => state.remaining - state.cost),
    );
    expect(replica.limiter.degraded).toBe(false);
  });
});
