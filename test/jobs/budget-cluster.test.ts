// docs/budgets.md, "Redis Cluster", through the real interfaces: two gateway processes on a three-master
// Redis Cluster and one simulator. Every key of jobs shares one hash tag, so budgets and caps on jobs in
// flight hold exactly across the replicas, and the trackers follow every job to its end, as on one Redis.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startRedisCluster, type RedisCluster } from '../support/redis-server.ts';
import { createOn, IMAGE_PRICE_USD, startJobReplicas, type JobReplicas } from '../support/job-replicas.ts';
import { canaryTenantKey } from '../support/secret-canary.ts';
import { waitFor } from '../support/wait-for.ts';

const BUDGET_CREATES = 10;
const PARALLEL_CREATES = 40;
const SETTLED_TIMEOUT_MS = 60_000;
const KEYS = { budget: canaryTenantKey(), slots: canaryTenantKey() };
type Tenant = keyof typeof KEYS;

let cluster: RedisCluster;
let fleet: JobReplicas;

beforeAll(async () => {
  cluster = await startRedisCluster();
  const nodes = cluster.nodes.map(({ host, port }) => `{ host: ${host}, port: ${port} }`).join(', ');
  fleet = await startJobReplicas({
    replicas: 2,
    store: `{ kind: redis, redis: { nodes: [${nodes}], commandTimeoutMs: 2000 } }`,
    credentials: 'shared: { env: SHARED_TOKEN, maxJobsInFlight: 50 }',
    tenants: [
      {
        id: 'budget',
        key: KEYS.budget,
        members: ['account: gateway', `budget: { monthlyUsd: ${BUDGET_CREATES * IMAGE_PRICE_USD} }`],
      },
      { id: 'slots', key: KEYS.slots, members: ['account: gateway', 'jobs: { maxInFlight: 3 }'] },
    ],
  });
}, 60_000);

afterAll(async () => {
  await fleet.stop();
  await cluster.stop();
});

async function createsInParallel(count: number, tenant: Tenant, route: 'images' | 'videos', body: string) {
  return Promise.all(
    Array.from({ length: count }, async (_, index) => {
      const replica = fleet.replicas[index % fleet.replicas.length]!;
      const response = await createOn(replica, KEYS[tenant].key, route, body);
      return { status: response.status, body: await response.text() };
    }),
  );
}

interface UsageData {
  budget: { monthly: { reservedUsd: number; spentUsd: number; remainingUsd: number } | null };
  jobsInFlight: number;
  lifetime: { reportedCostUsd: number };
}

async function usageOf(tenant: Tenant): Promise<UsageData> {
  const response = await fetch(`${fleet.replicas[1]!.gatewayUrl}/v1/account/usage`, {
    headers: { authorization: `Bearer ${KEYS[tenant].key}` },
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: UsageData }).data;
}

const forwardedCreates = () =>
  fleet.simulator.received.filter((entry) => entry.method === 'POST' && entry.url.startsWith('/v1/')).length;

test('a budget of exactly N × the price: exactly N of 40 concurrent creates admitted over two replicas, each settled by the trackers', async () => {
  fleet.simulator.clearReceived();
  const answers = await createsInParallel(PARALLEL_CREATES, 'budget', 'images', '{}');
  expect(answers.filter(({ status }) => status === 200)).toHaveLength(BUDGET_CREATES);
  const refused = answers.filter(({ status }) => status === 429);
  expect(refused).toHaveLength(PARALLEL_CREATES - BUDGET_CREATES);
  expect(JSON.parse(refused[0]!.body)).toMatchObject({ error: { code: 'budget_exceeded' } });
  expect(forwardedCreates()).toBe(BUDGET_CREATES);

  // Nobody polls: the trackers settle all N.
  await waitFor(
    'the N settled',
    async () => (await usageOf('budget')).jobsInFlight === 0,
    SETTLED_TIMEOUT_MS,
  );
  await waitFor('the reported costs counted', async () => {
    const { reportedCostUsd } = (await usageOf('budget')).lifetime;
    return Math.abs(reportedCostUsd - BUDGET_CREATES * IMAGE_PRICE_USD) < 1e-9;
  });
  expect((await usageOf('budget')).budget.monthly).toMatchObject({
    reservedUsd: 0,
    spentUsd: BUDGET_CREATES * IMAGE_PRICE_USD,
    remainingUsd: 0,
  });
}, 90_000);

test('jobs.maxInFlight: 3 holds over two replicas, and a DELETE frees exactly one slot', async () => {
  const fault = await fetch(`${fleet.simulator.url}/__simulator/faults`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ stallJob: true }),
  });
  expect(fault.status).toBe(204);
  const answers = await createsInParallel(10, 'slots', 'videos', '{"duration": 5}');
  const admitted = answers.filter(({ status }) => status === 200);
  expect(admitted).toHaveLength(3);
  expect(JSON.parse(answers.find(({ status }) => status === 429)!.body)).toMatchObject({
    error: { code: 'too_many_jobs_in_flight' },
  });
  const { data } = JSON.parse(admitted[0]!.body) as { data: { requestId: string } };
  const cancelled = await fetch(`${fleet.replicas[0]!.gatewayUrl}/v1/videos/generations/${data.requestId}`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${KEYS.slots.key}` },
  });
  expect(cancelled.status).toBe(200);
  await waitFor('the slot freed', async () => (await usageOf('slots')).jobsInFlight === 2);
  const again = await createsInParallel(5, 'slots', 'videos', '{"duration": 5}');
  expect(again.filter(({ status }) => status === 200)).toHaveLength(1);
  await fetch(`${fleet.simulator.url}/__simulator/faults`, { method: 'DELETE' });
}, 90_000);
