// docs/usage.md#get-v1accountusage: account.usage for `account: gateway` tenants: the tenant's own usage as metered
// by the gateway, shared by every replica on one Redis, and each polled record's cost counted once.
import { isDeepStrictEqual } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { usageKey } from '../../src/store/redis/keys.ts';
import type { UsageReport } from '../../src/usage/meter.ts';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { waitFor } from '../support/wait-for.ts';

async function call(harness: GatewayHarness, method: string, path: string, body?: string) {
  const response = await fetch(`${harness.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${harness.keys.alpha}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body }),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as { data: unknown };
}

async function usageOf(harness: GatewayHarness): Promise<UsageReport> {
  return (await call(harness, 'GET', '/v1/account/usage')).data as UsageReport;
}

/** Submits 3 images and a 5-second 480p video, then polls the image record twice. */
async function useSomething(harness: GatewayHarness, poller = harness) {
  const created = (await call(harness, 'POST', '/v1/images/generations', '{"samples":3}')).data as {
    requestId: string;
  };
  await call(
    harness,
    'POST',
    '/v1/videos/generations',
    '{"duration":5,"dimensions":{"width":640,"height":640}}',
  );
  const record = (await call(poller, 'GET', `/v1/images/generations/${created.requestId}`)).data as {
    totalCost: number;
  };
  await call(poller, 'GET', `/v1/images/generations/${created.requestId}`);
  return record.totalCost;
}

describe('memory store', () => {
  let harness: GatewayHarness;
  beforeAll(async () => {
    harness = await startGatewayHarness();
  });
  afterAll(async () => {
    await harness.close();
  });

  test('counts what the tenant asked for, and a polled cost once', async () => {
    const totalCost = await useSomething(harness);
    const usage = await usageOf(harness);
    const expected = {
      requests: { 'images.create': 1, 'videos.create': 1, 'images.get': 2 },
      imagesRequested: 3,
      videosRequested: 1,
      videoSecondsRequested: 5,
      reportedCostUsd: totalCost,
      estimatedCostUsd: 0.031,
    };
    // No budget; the video may or may not have been seen to end by the tracker yet (docs/budgets.md).
    const { jobsInFlight } = usage as unknown as { jobsInFlight: number };
    expect([0, 1]).toContain(jobsInFlight);
    expect(usage).toEqual({
      month: new Date().toISOString().slice(0, 7),
      currentMonth: expected,
      lifetime: expected,
      budget: { daily: null, monthly: null },
      jobsInFlight,
    });
    const metrics = await harness.metrics.registry.metrics();
    expect(metrics).toContain('gengate_usage_images_total{tenant="alpha"} 3');
    expect(metrics).toContain('gengate_usage_video_seconds_total{tenant="alpha"} 5');
    expect(metrics).toContain('gengate_usage_estimated_cost_usd_total{tenant="alpha"} 0.031');
    // Polled twice, counted once.
    expect(metrics).toContain(`gengate_usage_reported_cost_usd_total{tenant="alpha"} ${totalCost}`);
  });
});

describe('two replicas on one Redis', () => {
  let redis: RedisServer;
  let replicas: [GatewayHarness, GatewayHarness];
  beforeAll(async () => {
    redis = await startRedisServer();
    const storeYaml = `{ kind: redis, redis: { url: "${redis.url}", commandTimeoutMs: 2000 } }`;
    replicas = [await startGatewayHarness({ storeYaml }), await startGatewayHarness({ storeYaml })];
  });
  afterAll(async () => {
    await Promise.all(replicas.map((replica) => replica.close()));
    await redis.stop();
  });

  test("one replica's metering is seen by the other, and a cost polled on both counts once", async () => {
    const [first, second] = replicas;
    // The two harnesses front different simulators, so the record polled is the first one's.
    const totalCost = await useSomething(first);
    await call(first, 'GET', '/v1/account/keys');
    const expected = {
      requests: { 'images.create': 1, 'videos.create': 1, 'images.get': 2, 'account.keys': 1 },
      imagesRequested: 3,
      videosRequested: 1,
      videoSecondsRequested: 5,
      reportedCostUsd: totalCost,
      estimatedCostUsd: 0.031,
    };
    // Reading the usage is a request too: the reads below add a varying number of account.usage.
    const withoutReads = (report: UsageReport) => ({
      ...report.lifetime,
      requests: Object.fromEntries(
        Object.entries(report.lifetime.requests).filter(([route]) => route !== 'account.usage'),
      ),
    });
    // Each replica flushes once a second, so the other's view converges: wait for all of it.
    let usage = await usageOf(second);
    await waitFor('usage flushed to Redis', async () => {
      usage = await usageOf(second);
      return isDeepStrictEqual(withoutReads(usage), expected);
    });
    expect(withoutReads(usage)).toEqual(expected);
    expect(usage.lifetime.requests['account.usage']).toBeGreaterThan(0);
    expect(usage.currentMonth).toEqual(usage.lifetime);
    // On /metrics, the replica whose flush counted the cost has it: once across the two.
    const reportedCosts = () =>
      Promise.all(
        replicas.map(async (replica) => {
          const metric = replica.metrics.registry.getSingleMetric('gengate_usage_reported_cost_usd_total');
          const values = (await metric?.get())?.values ?? [];
          return values.find(({ labels }) => labels.tenant === 'alpha')?.value;
        }),
      );
    let reported = await reportedCosts();
    await waitFor('the counted cost on /metrics', async () => {
      reported = await reportedCosts();
      return reported[0] === totalCost;
    });
    expect(reported).toEqual([totalCost, 0]);
  });

  // Money is summed exactly: both costs are kept as integers of micro-USD (HINCRBY), never as a sum of
  // floats. Regression: the reported cost was summed with HINCRBYFLOAT in USD.
  test('costs are kept in Redis as integers of micro-USD', async () => {
    const [first] = replicas;
    const client = new Redis(redis.url);
    try {
      const stored = await client.hgetall(`gengate:${usageKey('alpha', 'lifetime')}`);
      const { lifetime } = await usageOf(first);
      expect(stored.reportedCostMicroUsd).toBe(String(Math.round(lifetime.reportedCostUsd * 1e6)));
      expect(stored.estimatedCostMicroUsd).toBe(String(Math.round(lifetime.estimatedCostUsd * 1e6)));
      expect(stored).not.toHaveProperty('reportedCostUsd');
      expect(stored).not.toHaveProperty('estimatedCostUsd');
    } finally {
      client.disconnect();
    }
  });

  // Each cost was kept in USD as a float before it was kept in micro-USD: a store written then keeps
  // counting what it holds after an upgrade.
  test('costs kept in the older fields still count', async () => {
    const [first] = replicas;
    const before = (await usageOf(first)).lifetime;
    const client = new Redis(redis.url);
    try {
      const key = `gengate:${usageKey('alpha', 'lifetime')}`;
      await client.hincrbyfloat(key, 'estimatedCostUsd', 0.25);
      await client.hincrbyfloat(key, 'reportedCostUsd', 0.125);
    } finally {
      client.disconnect();
    }
    const after = (await usageOf(first)).lifetime;
    expect(Math.round((after.estimatedCostUsd - before.estimatedCostUsd) * 1e6)).toBe(250_000);
    expect(Math.round((after.reportedCostUsd - before.reportedCostUsd) * 1e6)).toBe(125_000);
  });
});
