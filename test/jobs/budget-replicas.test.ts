// Budgets and jobs in flight (docs/budgets.md) through the real interfaces: three gateway processes share one Redis and one
// simulator. Budgets and caps on jobs in flight hold exactly across them, every create the upstream accepts
// is followed to its end by the trackers (no client polls), refunds make room at once, and a SIGKILLed
// replica's leased jobs are still settled exactly once.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { SimulatorServer } from '../../src/simulator/server.ts';
import type { GatewayProcess } from '../support/gateway-process.ts';
import { createOn, IMAGE_PRICE_USD, startJobReplicas, type JobReplicas } from '../support/job-replicas.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { CANARY_UPSTREAM_TOKENS, canaryTenantKey } from '../support/secret-canary.ts';
import { waitFor } from '../support/wait-for.ts';

const BUDGET_CREATES = 50;
const PARALLEL_CREATES = 200;
// Generous: three processes on a loaded two-core machine.
const SETTLED_TIMEOUT_MS = 60_000;
const KEYS = {
  exact: canaryTenantKey(),
  refunds: canaryTenantKey(),
  slots: canaryTenantKey(),
  kill: canaryTenantKey(),
  fails: canaryTenantKey(),
  cancels: canaryTenantKey(),
  'cap-a': canaryTenantKey(),
  'cap-b': canaryTenantKey(),
};

let redis: RedisServer;
let fleet: JobReplicas;
let simulator: SimulatorServer;
let replicas: GatewayProcess[];

beforeAll(async () => {
  redis = await startRedisServer();
  const tenant = (id: keyof typeof KEYS, ...members: string[]) => ({ id, key: KEYS[id], members });
  fleet = await startJobReplicas({
    replicas: 3,
    store: `{ kind: redis, redis: { url: "${redis.url}", commandTimeoutMs: 2000 } }`,
    credentials: 'shared: { env: SHARED_TOKEN }, capped: { env: SHARED_TOKEN, maxJobsInFlight: 4 }',
    tenants: [
      tenant('exact', `budget: { monthlyUsd: ${BUDGET_CREATES * IMAGE_PRICE_USD} }`),
      tenant('refunds', 'budget: { monthlyUsd: 0.1, dailyUsd: 0.5 }'),
      tenant('slots', 'jobs: { maxInFlight: 3 }'),
      tenant('kill', 'budget: { monthlyUsd: 1 }'),
      tenant('fails', 'budget: { monthlyUsd: 0.02 }'),
      tenant('cancels', 'budget: { monthlyUsd: 0.062 }'),
      { ...tenant('cap-a', 'account: gateway'), credential: 'capped' },
      { ...tenant('cap-b', 'account: gateway'), credential: 'capped' },
    ],
  });
  ({ simulator, replicas } = fleet);
}, 60_000);

afterAll(async () => {
  await fleet.stop();
  await redis.stop();
});

function create(
  replica: GatewayProcess,
  tenant: keyof typeof KEYS,
  route: 'images' | 'videos' = 'images',
  body = '{}',
) {
  return createOn(replica, KEYS[tenant].key, route, body);
}

async function usageOf(tenant: keyof typeof KEYS, replica = replicas[0]!) {
  const response = await fetch(`${replica.gatewayUrl}/v1/account/usage`, {
    headers: { authorization: `Bearer ${KEYS[tenant].key}` },
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: UsageData }).data;
}

interface BudgetPeriod {
  limitUsd: number;
  reservedUsd: number;
  spentUsd: number;
  remainingUsd: number;
  resetsAt: string;
}
interface UsageData {
  budget: { daily: BudgetPeriod | null; monthly: BudgetPeriod | null };
  jobsInFlight: number;
  lifetime: { reportedCostUsd: number };
}

const forwardedCreates = () =>
  simulator.received.filter((entry) => entry.method === 'POST' && entry.url.startsWith('/v1/')).length;

async function createsInParallel(
  count: number,
  tenant: keyof typeof KEYS,
  route: 'images' | 'videos' = 'images',
  body = '{}',
) {
  return Promise.all(
    Array.from({ length: count }, async (_, index) => {
      const response = await create(replicas[index % replicas.length]!, tenant, route, body);
      return { status: response.status, body: await response.text(), headers: response.headers };
    }),
  );
}

test('a replica warns at start-up when tenants have budgets and Redis keeps no AOF', async () => {
  const warning = 'tenants have budgets but Redis has no AOF persistence: a Redis restart forgets spending';
  await waitFor('the warning', () => replicas[0]!.lines.some((line) => line.msg === warning));
  expect(replicas[0]!.lines.find((line) => line.msg === warning)).toMatchObject({ level: 40 });
});

describe('a monthly budget of exactly N × the price', () => {
  test('200 concurrent creates over three replicas: exactly N admitted, the rest 429 budget_exceeded', async () => {
    simulator.clearReceived();
    const answers = await createsInParallel(PARALLEL_CREATES, 'exact');
    const admitted = answers.filter((answer) => answer.status === 200);
    const refused = answers.filter((answer) => answer.status === 429);
    expect(answers.filter((answer) => answer.status !== 200 && answer.status !== 429)).toEqual([]);
    expect(admitted).toHaveLength(BUDGET_CREATES);
    expect(refused).toHaveLength(PARALLEL_CREATES - BUDGET_CREATES);
    expect(forwardedCreates()).toBe(BUDGET_CREATES);
    const first = refused[0]!;
    const resetsAt = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() + 1, 1));
    expect(JSON.parse(first.body)).toEqual({
      status: 429,
      error: {
        code: 'budget_exceeded',
        type: 'rate_limit_error',
        message: `monthly budget exceeded: this request is expected to cost 0.01 USD and 0 USD of 0.5 USD is left until ${resetsAt.toISOString()}`,
      },
    });
    const retryAfter = Number(first.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(Math.abs(retryAfter - (resetsAt.getTime() - Date.now()) / 1000)).toBeLessThan(120);

    // Nobody polls: the trackers settle all N at the reported cost, which equals the estimate here.
    await waitFor(
      'the N jobs settled',
      async () => (await usageOf('exact')).jobsInFlight === 0,
      SETTLED_TIMEOUT_MS,
    );
    await waitFor('the reported costs counted', async () => {
      const { reportedCostUsd } = (await usageOf('exact')).lifetime;
      return Math.abs(reportedCostUsd - 0.5) < 1e-9;
    });
    const usage = await usageOf('exact');
    expect(usage.budget.monthly).toMatchObject({
      limitUsd: 0.5,
      reservedUsd: 0,
      spentUsd: 0.5,
      remainingUsd: 0,
    });
    expect(usage.budget.daily).toBeNull();
    expect(usage.lifetime.reportedCostUsd).toBeCloseTo(0.5, 9);
    expect((await create(replicas[1]!, 'exact')).status).toBe(429);
  });
});

describe('settlement refunds', () => {
  test('jobs reported below the estimate refund the difference: exactly as many more are admitted', async () => {
    // The first 10 jobs cost 0.004 each: 0.06 of the 0.1 budget comes back when they are settled.
    await fetch(`${simulator.url}/__simulator/faults`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jobResultCostUsd: 0.004, times: 10 }),
    });
    const first = await createsInParallel(20, 'refunds');
    expect(first.filter((answer) => answer.status === 200)).toHaveLength(10);
    await waitFor(
      'the 10 settled',
      async () => (await usageOf('refunds')).jobsInFlight === 0,
      SETTLED_TIMEOUT_MS,
    );
    expect((await usageOf('refunds')).budget.monthly).toMatchObject({ spentUsd: 0.04, remainingUsd: 0.06 });

    const second = await createsInParallel(20, 'refunds');
    expect(second.filter((answer) => answer.status === 200)).toHaveLength(6);
    await waitFor(
      'the 6 settled',
      async () => (await usageOf('refunds')).jobsInFlight === 0,
      SETTLED_TIMEOUT_MS,
    );
    // Usage is flushed by each replica about once a second (docs/usage.md).
    await waitFor('the reported costs counted', async () => {
      const { reportedCostUsd } = (await usageOf('refunds')).lifetime;
      return Math.abs(reportedCostUsd - 0.1) < 1e-9;
    });
    const usage = await usageOf('refunds');
    expect(usage.budget.monthly).toMatchObject({ reservedUsd: 0, spentUsd: 0.1, remainingUsd: 0 });
    expect(usage.budget.daily).toMatchObject({ limitUsd: 0.5, spentUsd: 0.1, remainingUsd: 0.4 });
    expect(usage.lifetime.reportedCostUsd).toBeCloseTo(0.1, 9);
  });
});

describe('failed jobs', () => {
  /** The tenant's monthly budget once none of its jobs is in flight. */
  async function monthlyOnceSettled(tenant: keyof typeof KEYS) {
    await waitFor(
      `${tenant}: every job settled`,
      async () => (await usageOf(tenant)).jobsInFlight === 0,
      SETTLED_TIMEOUT_MS,
    );
    return (await usageOf(tenant)).budget.monthly;
  }

  test('are refunded in full: the budget admits as many again', async () => {
    await setFault({ failJob: true, times: 2 });
    const first = await createsInParallel(5, 'fails');
    expect(first.filter((answer) => answer.status === 200)).toHaveLength(2);
    expect(await monthlyOnceSettled('fails')).toMatchObject({
      reservedUsd: 0,
      spentUsd: 0,
      remainingUsd: 0.02,
    });
    const again = await createsInParallel(5, 'fails');
    expect(again.filter((answer) => answer.status === 200)).toHaveLength(2);
    // The two completed: spent in full. (Waited for here, so that no later test meets them in flight.)
    expect(await monthlyOnceSettled('fails')).toMatchObject({
      reservedUsd: 0,
      spentUsd: 0.02,
      remainingUsd: 0,
    });
  });
});

describe('cancelled jobs', () => {
  test("a tenant's DELETE refunds the job in full: the budget admits as many again", async () => {
    // Two videos of 5 s at the 480p price (0.031 each) spend the budget; they never end by themselves.
    await setFault({ stallJob: true });
    const first = await createsInParallel(3, 'cancels', 'videos', '{"duration": 5}');
    expect(first.filter((answer) => answer.status === 200)).toHaveLength(2);
    expect((await usageOf('cancels')).budget.monthly).toMatchObject({ reservedUsd: 0.062, remainingUsd: 0 });
    for (const [index, answer] of first.filter(({ status }) => status === 200).entries()) {
      const { data } = JSON.parse(answer.body) as { data: { requestId: string } };
      const cancelled = await fetch(
        `${replicas[index]!.gatewayUrl}/v1/videos/generations/${data.requestId}`,
        {
          method: 'DELETE',
          headers: { authorization: `Bearer ${KEYS.cancels.key}` },
        },
      );
      expect(cancelled.status).toBe(200);
    }
    await waitFor('both settled', async () => (await usageOf('cancels')).jobsInFlight === 0);
    expect((await usageOf('cancels')).budget.monthly).toMatchObject({
      reservedUsd: 0,
      spentUsd: 0,
      remainingUsd: 0.062,
    });
    const again = await createsInParallel(3, 'cancels', 'videos', '{"duration": 5}');
    expect(again.filter((answer) => answer.status === 200)).toHaveLength(2);
    await fetch(`${simulator.url}/__simulator/faults`, { method: 'DELETE' });
  });
});

describe('jobs.maxInFlight: 3', () => {
  test('10 parallel creates over the replicas: 3 admitted; each job end frees exactly one slot', async () => {
    await fetch(`${simulator.url}/__simulator/faults`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ stallJob: true }),
    });
    const answers = await createsInParallel(10, 'slots', 'videos', '{"duration": 5}');
    const admitted = answers.filter((answer) => answer.status === 200);
    expect(admitted).toHaveLength(3);
    const refused = answers.find((answer) => answer.status === 429)!;
    expect(JSON.parse(refused.body)).toEqual({
      status: 429,
      error: {
        code: 'too_many_jobs_in_flight',
        type: 'rate_limit_error',
        message: 'this tenant has 3 unfinished jobs, its most at once; retry when one ends',
      },
    });
    expect(refused.headers.get('retry-after')).toBe('1');
    expect((await usageOf('slots')).jobsInFlight).toBe(3);

    // A tenant's DELETE cancels one job: exactly one slot comes free.
    const { data } = JSON.parse(admitted[0]!.body) as { data: { requestId: string } };
    const cancelled = await fetch(`${replicas[2]!.gatewayUrl}/v1/videos/generations/${data.requestId}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${KEYS.slots.key}` },
    });
    expect(cancelled.status).toBe(200);
    await waitFor('the slot freed', async () => (await usageOf('slots')).jobsInFlight === 2);
    const again = await createsInParallel(5, 'slots', 'videos', '{"duration": 5}');
    expect(again.filter((answer) => answer.status === 200)).toHaveLength(1);
    await fetch(`${simulator.url}/__simulator/faults`, { method: 'DELETE' });
  });
});

describe("a credential's maxJobsInFlight", () => {
  test('holds across the tenants that share it', async () => {
    await setFault({ stallJob: true });
    const first = await createsInParallel(6, 'cap-a', 'videos', '{"duration": 5}');
    expect(first.filter((answer) => answer.status === 200)).toHaveLength(4);
    const other = await createsInParallel(3, 'cap-b', 'videos', '{"duration": 5}');
    expect(other.map((answer) => answer.status)).toEqual([429, 429, 429]);
    expect(JSON.parse(other[0]!.body)).toMatchObject({
      error: {
        code: 'too_many_jobs_in_flight',
        message: 'the upstream account has 4 unfinished jobs, its most at once; retry when one ends',
      },
    });
    await fetch(`${simulator.url}/__simulator/faults`, { method: 'DELETE' });
  });
});

async function setFault(fault: Record<string, unknown>): Promise<void> {
  const response = await fetch(`${simulator.url}/__simulator/faults`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(fault),
  });
  expect(response.status).toBe(204);
}

describe('a replica SIGKILLed with jobs leased', () => {
  test('every job is still settled exactly once, and spending is what the upstream charged', async () => {
    // Polls hang for a while: whichever replica leased a job holds it when one of them is killed.
    await setFault({ delayMs: 2_000, match: { method: 'GET', pathPrefix: '/v1/images/generations/' } });
    const answers = await createsInParallel(30, 'kill');
    expect(answers.filter((answer) => answer.status === 200)).toHaveLength(30);
    const pollsBefore = simulator.polls.get('shared') ?? 0;
    await waitFor(
      'the trackers polling the new jobs',
      () => (simulator.polls.get('shared') ?? 0) > pollsBefore,
    );
    const killed = replicas[0]!;
    killed.signal('SIGKILL');
    await killed.exited;
    await fetch(`${simulator.url}/__simulator/faults`, { method: 'DELETE' });
    const survivor = replicas[1]!;
    await waitFor(
      'every job settled by the survivors',
      async () => (await usageOf('kill', survivor)).jobsInFlight === 0,
      SETTLED_TIMEOUT_MS,
    );
    const usage = await usageOf('kill', survivor);
    expect(usage.budget.monthly).toMatchObject({ reservedUsd: 0, spentUsd: 0.3 });
    await waitFor('the reported costs counted', async () => {
      const { reportedCostUsd } = (await usageOf('kill', survivor)).lifetime;
      return Math.abs(reportedCostUsd - 0.3) < 1e-9;
    });

    // The simulator's own record of what the account was charged: every completed job of every tenant.
    const charged = await fetch(`${simulator.url}/v1/account/usage`, {
      headers: { authorization: `Bearer ${CANARY_UPSTREAM_TOKENS.shared}` },
    });
    const { data } = (await charged.json()) as { data: { totalCost: number } };
    const spentByTenant = await Promise.all(
      (['exact', 'refunds', 'fails', 'kill'] as const).map(async (tenant) => {
        const usage = await usageOf(tenant, survivor);
        expect(usage.jobsInFlight, tenant).toBe(0);
        return usage.budget.monthly!.spentUsd;
      }),
    );
    expect(data.totalCost).toBeCloseTo(
      spentByTenant.reduce((sum, spent) => sum + spent, 0),
      9,
    );
  });
});
