// docs/budgets.md, "Store failures and the overshoot bound", through the real interfaces: two gateway
// processes in failMode open on one Redis that is frozen (SIGSTOP), or killed and restarted (with AOF, as
// budgets require). The creates they admit without reservation meanwhile are followed once the store
// answers again, with no client polling: each is charged its real cost once, to the budget and to
// reportedCostUsd, holds its slot while it runs, and the budget's overshoot stays within the bound.
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { SimulatorServer } from '../../src/simulator/server.ts';
import type { GatewayProcess } from '../support/gateway-process.ts';
import { createOn, IMAGE_PRICE_USD, startJobReplicas, type JobReplicas } from '../support/job-replicas.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { CANARY_UPSTREAM_TOKENS, canaryTenantKey } from '../support/secret-canary.ts';
import { waitFor } from '../support/wait-for.ts';

// What the simulator charges for the images created during the outage: below the estimate, so spending
// shows the upstream's cost, not the reservation.
const OUTAGE_COST_USD = 0.004;
const VIDEO_ESTIMATE_USD = 5 * 0.0062;
const REPLICAS = 2;
// The bounded tenant's limit on image samples: L per W.
const SAMPLES_LIMIT = 4;
// A short window, so that the outage spans several: the bound's refill term is exercised.
const WINDOW_SECONDS = 2;
const OUTAGE_ROUNDS = 10;
const ROUND_PAUSE_MS = 400;
const SETTLED_TIMEOUT_MS = 60_000;
const KEYS = { followed: canaryTenantKey(), bounded: canaryTenantKey() };
type Tenant = keyof typeof KEYS;

let redis: RedisServer;
let fleet: JobReplicas;
let simulator: SimulatorServer;
let replicas: GatewayProcess[];

beforeAll(async () => {
  // AOF fsynced at every write: a killed and restarted Redis keeps every budget (docs/budgets.md).
  redis = await startRedisServer(['--appendonly', 'yes', '--appendfsync', 'always']);
  fleet = await startJobReplicas({
    replicas: REPLICAS,
    store: `{ kind: redis, failMode: open, replicas: ${REPLICAS}, redis: { url: "${redis.url}", commandTimeoutMs: 300 } }`,
    tenants: [
      { id: 'followed', key: KEYS.followed, members: ['budget: { monthlyUsd: 1 }', 'account: gateway'] },
      {
        id: 'bounded',
        key: KEYS.bounded,
        members: [
          'budget: { monthlyUsd: 0.04 }',
          'account: gateway',
          `limits: [{ id: samples, routes: ["images.create"], cost: samples, limit: ${SAMPLES_LIMIT}, windowSeconds: ${WINDOW_SECONDS} }]`,
        ],
      },
    ],
  });
  ({ simulator, replicas } = fleet);
}, 60_000);

afterAll(async () => {
  await fleet.stop();
  await redis.stop();
});

function create(replica: GatewayProcess, tenant: Tenant, route: 'images' | 'videos', body: object) {
  return createOn(replica, KEYS[tenant].key, route, JSON.stringify(body));
}

async function createsOverReplicas(count: number, tenant: Tenant, route: 'images' | 'videos', body: object) {
  return Promise.all(
    Array.from({ length: count }, async (_, index) => {
      const response = await create(replicas[index % replicas.length]!, tenant, route, body);
      return { status: response.status, body: (await response.json()) as { data?: { requestId: string } } };
    }),
  );
}

interface UsageData {
  budget: { monthly: { reservedUsd: number; spentUsd: number; remainingUsd: number } };
  jobsInFlight: number;
  lifetime: { reportedCostUsd: number };
}

async function usageOf(tenant: Tenant): Promise<UsageData> {
  const usage = await usageOnceAnswered(tenant);
  expect(usage).toBeDefined();
  return usage!;
}

/** The usage, or undefined while the replica's store breaker is still open (503). */
async function usageOnceAnswered(tenant: Tenant): Promise<UsageData | undefined> {
  const response = await fetch(`${replicas[1]!.gatewayUrl}/v1/account/usage`, {
    headers: { authorization: `Bearer ${KEYS[tenant].key}` },
  });
  if (response.status === 503) return undefined;
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: UsageData }).data;
}

/** A counter of every replica's /metrics, summed. */
async function counterOverReplicas(name: string, tenant: Tenant): Promise<number> {
  let sum = 0;
  for (const replica of replicas) {
    const text = await (await fetch(`${replica.adminUrl}/metrics`)).text();
    const line = text.split('\n').find((entry) => entry.startsWith(`${name}{tenant="${tenant}"}`));
    sum += Number(line?.split(' ')[1] ?? 'NaN');
  }
  return sum;
}

async function setFault(fault: Record<string, unknown>): Promise<void> {
  const response = await fetch(`${simulator.url}/__simulator/faults`, {
    method: fault.clear === true ? 'DELETE' : 'PUT',
    headers: { 'content-type': 'application/json' },
    body: fault.clear === true ? undefined : JSON.stringify(fault),
  });
  expect(response.status).toBe(204);
}

/** What the simulator charged the shared account, its own record. */
async function simulatorCharged(): Promise<number> {
  const response = await fetch(`${simulator.url}/v1/account/usage`, {
    headers: { authorization: `Bearer ${CANARY_UPSTREAM_TOKENS.shared}` },
  });
  return ((await response.json()) as { data: { totalCost: number } }).data.totalCost;
}

const near = (actual: number, expected: number) => Math.abs(actual - expected) < 1e-9;

/** Waits until both replicas bypass the store (a create on each trips its breaker). */
async function bothDegraded(): Promise<void> {
  for (const replica of replicas) {
    await waitFor('the replica to bypass the store', async () => {
      const text = await (await fetch(`${replica.adminUrl}/metrics`)).text();
      return text.includes('gengate_store_degraded 1');
    });
  }
}

test('creates admitted while Redis is frozen are followed once it thaws: real cost charged once, slots held while they run', async () => {
  // Before the outage: two creates reserved and settled the ordinary way.
  expect((await createsOverReplicas(2, 'followed', 'images', {})).map(({ status }) => status)).toEqual([
    200, 200,
  ]);
  await waitFor(
    'the two settled',
    async () => (await usageOf('followed')).jobsInFlight === 0,
    SETTLED_TIMEOUT_MS,
  );
  const chargedBefore = await simulatorCharged();

  redis.freeze();
  // Ten images that cost less than their estimate, then two videos that never end by themselves.
  await setFault({ jobResultCostUsd: OUTAGE_COST_USD, times: 10 });
  const images = await createsOverReplicas(10, 'followed', 'images', {});
  await setFault({ stallJob: true });
  const videos = await createsOverReplicas(2, 'followed', 'videos', { duration: 5 });
  await setFault({ clear: true });
  expect([...images, ...videos].map(({ status }) => status)).toEqual(Array(12).fill(200));
  await bothDegraded();
  expect(await counterOverReplicas('gengate_budget_unreserved_admissions_total', 'followed')).toBe(12);
  redis.thaw();

  // Nobody polls: the trackers settle the ten at the upstream's cost; the two videos hold their slots.
  const spent = 2 * IMAGE_PRICE_USD + 10 * OUTAGE_COST_USD;
  await waitFor(
    'the ten settled and the videos followed',
    async () => {
      const usage = await usageOnceAnswered('followed');
      return usage?.jobsInFlight === 2 && near(usage.budget.monthly.spentUsd, spent);
    },
    SETTLED_TIMEOUT_MS,
  );
  expect((await usageOf('followed')).budget.monthly).toMatchObject({ reservedUsd: 2 * VIDEO_ESTIMATE_USD });

  // The tenant's DELETEs cancel the videos: refunded in full, their slots freed.
  for (const [index, video] of videos.entries()) {
    const cancelled = await fetch(
      `${replicas[index]!.gatewayUrl}/v1/videos/generations/${video.body.data!.requestId}`,
      { method: 'DELETE', headers: { authorization: `Bearer ${KEYS.followed.key}` } },
    );
    expect(cancelled.status).toBe(200);
  }
  await waitFor('the videos settled', async () => (await usageOf('followed')).jobsInFlight === 0);
  await waitFor('the reported costs counted', async () =>
    near((await usageOf('followed')).lifetime.reportedCostUsd, spent),
  );
  const usage = await usageOf('followed');
  expect(usage.budget.monthly).toMatchObject({ reservedUsd: 0, spentUsd: spent, remainingUsd: 1 - spent });
  // Exactly what the upstream charged for them, once.
  expect((await simulatorCharged()) - chargedBefore).toBeCloseTo(10 * OUTAGE_COST_USD, 9);
  expect(await counterOverReplicas('gengate_budget_unreserved_dropped_total', 'followed')).toBe(0);
}, 90_000);

test('Redis killed and restarted: the overshoot stays within the documented bound, and is charged', async () => {
  // Before the outage the budget is spent to the last cent: the store refuses the next create.
  const before = await createsOverReplicas(3, 'bounded', 'images', { samples: 2 });
  expect(before.map(({ status }) => status).sort()).toEqual([200, 200, 429]);
  await waitFor(
    'the two settled',
    async () => (await usageOf('bounded')).jobsInFlight === 0,
    SETTLED_TIMEOUT_MS,
  );
  expect((await usageOf('bounded')).budget.monthly).toMatchObject({ spentUsd: 0.04, remainingUsd: 0 });

  const outageStarted = Date.now();
  await redis.kill();
  const during = [];
  // Creates of 2 samples, in rounds spread over several windows.
  for (let round = 0; round < OUTAGE_ROUNDS; round += 1) {
    during.push(...(await createsOverReplicas(4, 'bounded', 'images', { samples: 2 })));
    await new Promise((resolve) => setTimeout(resolve, ROUND_PAUSE_MS));
  }
  await redis.restart();
  const outageSeconds = (Date.now() - outageStarted) / 1_000;

  const admittedSamples = 2 * during.filter(({ status }) => status === 200).length;
  expect(during.filter(({ status }) => status !== 200 && status !== 429)).toEqual([]);
  // docs/budgets.md: each replica's fallback admits ⌈L/R⌉ at once and ⌈L/R⌉ per window after.
  const perReplica = Math.ceil(SAMPLES_LIMIT / REPLICAS);
  const boundSamples = REPLICAS * (perReplica + Math.floor((outageSeconds * perReplica) / WINDOW_SECONDS));
  expect(admittedSamples).toBeGreaterThan(0);
  expect(admittedSamples).toBeLessThanOrEqual(boundSamples);

  // Once the store is back the admitted creates are charged what they cost: the overshoot, in the open.
  const overshoot = admittedSamples * IMAGE_PRICE_USD;
  await waitFor(
    'the outage creates settled',
    async () => {
      const usage = await usageOnceAnswered('bounded');
      return usage?.jobsInFlight === 0 && near(usage.budget.monthly.spentUsd, 0.04 + overshoot);
    },
    SETTLED_TIMEOUT_MS,
  );
  expect((await usageOf('bounded')).budget.monthly).toMatchObject({ reservedUsd: 0, remainingUsd: 0 });
  expect(overshoot).toBeLessThanOrEqual(boundSamples * IMAGE_PRICE_USD);
  // The store refuses again.
  expect((await create(replicas[0]!, 'bounded', 'images', { samples: 1 })).status).toBe(429);
}, 90_000);
