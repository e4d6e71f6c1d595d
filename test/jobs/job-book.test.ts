// The store's side of jobs (src/jobs/book.ts), on Redis and in memory alike: reservations all or nothing
// and exact under concurrency, settlement once with its refunds, slots freed, leases, and a create with
// budgets and caps still one script call on Redis.
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema.ts';
import type { JobReservation } from '../../src/jobs/book.ts';
import { createMetrics } from '../../src/observability/metrics.ts';
import type { LimitRequest } from '../../src/ratelimit/types.ts';
import type { GatewayStore, StoreJobOptions } from '../../src/store/gateway-store.ts';
import { createMemoryJobBook } from '../../src/store/memory/job-book.ts';
import { openStore } from '../../src/store/open-store.ts';
import { clientCommandsDuring, startRedisServer, type RedisServer } from '../support/redis-server.ts';

const PRICE = 10_000; // 0.01 USD in micro-USD
const JOB_OPTIONS: StoreJobOptions = {
  answerWaitMs: 60_000,
  leaseMs: 30_000,
  maxAgeMs: 86_400_000,
  credentials: () => ['shared'],
  budgets: false,
};
const LIMITS: LimitRequest[] = [{ id: 'requests', limit: 1000, windowSeconds: 60, cost: 1 }];

function reservation(overrides: Partial<JobReservation> = {}): JobReservation {
  return {
    route: 'images.create',
    credential: 'shared',
    costMicroUsd: PRICE,
    dailyMicroUsd: undefined,
    monthlyMicroUsd: 3 * PRICE,
    tenantMaxInFlight: undefined,
    credentialMaxInFlight: undefined,
    ...overrides,
  };
}

function storeConfig(kind: 'redis' | 'memory', url = 'redis://127.0.0.1:1'): GatewayConfig['store'] {
  return {
    kind,
    redis: { url, keyPrefix: 'gengate:', commandTimeoutMs: 2_000 },
    failMode: 'open',
    replicas: 1,
    ownershipTtlSeconds: 3600,
  };
}

let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedisServer();
});
afterAll(async () => {
  await redis.stop();
});

async function open(kind: 'redis' | 'memory'): Promise<GatewayStore> {
  return openStore(storeConfig(kind, redis.url), {
    logger: pino({ level: 'silent' }),
    metrics: createMetrics(new Registry()),
    jobs: JOB_OPTIONS,
  });
}

const claim = () => ({ requestId: randomUUID(), intent: 'claim' as const });

describe.each(['redis', 'memory'] as const)('jobs on %s', (kind) => {
  test('a budget of 3 × the price admits exactly 3 of 10 concurrent creates; a refund makes room at once', async () => {
    const store = await open(kind);
    const tenant = `budget-${randomUUID().slice(0, 8)}`;
    try {
      const checks = Array.from({ length: 10 }, claim);
      const results = await Promise.all(
        checks.map((check) => store.admission.admit(tenant, LIMITS, check, reservation())),
      );
      const admitted = checks.filter((_, index) => results[index]?.kind === 'decided');
      expect(admitted).toHaveLength(3);
      expect(results.find((result) => result.kind === 'job_refused')).toMatchObject({
        kind: 'job_refused',
        refusal: { kind: 'budget_exceeded', scope: 'monthly', remainingMicroUsd: 0 },
      });
      const job = { requestId: admitted[0]!.requestId, tenantId: tenant, credential: 'shared' };
      await store.jobs.submitted(job.requestId, 1_000);

      // Completed below the estimate: the difference is refunded; a second settlement does nothing.
      const settled = await store.jobs.settle(job, {
        outcome: 'completed',
        reportedMicroUsd: 4_000,
        record: '{}',
      });
      expect(settled).toMatchObject({
        spentMicroUsd: 4_000,
        end: { outcome: 'completed', tenant, record: '{}' },
      });
      expect(await store.jobs.settle(job, { outcome: 'failed', record: '{}' })).toBeUndefined();
      expect(await store.jobs.usage(tenant, undefined, 3 * PRICE)).toMatchObject({
        monthly: { reservedMicroUsd: 2 * PRICE, spentMicroUsd: 4_000 },
        jobsInFlight: 2,
      });
      // 6_000 left: a create of 10_000 does not fit, one of 6_000 does.
      expect((await store.admission.admit(tenant, LIMITS, claim(), reservation())).kind).toBe('job_refused');
      const fits = await store.admission.admit(tenant, LIMITS, claim(), reservation({ costMicroUsd: 6_000 }));
      expect(fits.kind).toBe('decided');

      // Failed and refused creates refund in full.
      const second = { ...job, requestId: admitted[1]!.requestId };
      await store.jobs.settle(second, { outcome: 'failed', record: '{}' });
      await store.jobs.settle({ ...job, requestId: admitted[2]!.requestId }, { outcome: 'refused' });
      expect(await store.jobs.usage(tenant, undefined, 3 * PRICE)).toMatchObject({
        monthly: { reservedMicroUsd: 6_000, spentMicroUsd: 4_000 },
        jobsInFlight: 1,
      });
    } finally {
      await store.close();
    }
  });

  // Regression: with both budgets spent, the refusal named the daily one, whose Retry-After (midnight)
  // sent the client back to a refusal until the month's end.
  test('with both budgets spent, the refusal names the month: its reset is the one that admits again', async () => {
    const store = await open(kind);
    const tenant = `both-${randomUUID().slice(0, 8)}`;
    // A credential of its own: the jobs it leaves in flight take no other test's slots.
    const credential = tenant;
    const both = reservation({ credential, dailyMicroUsd: PRICE, monthlyMicroUsd: PRICE });
    try {
      expect((await store.admission.admit(tenant, LIMITS, claim(), both)).kind).toBe('decided');
      expect(await store.admission.admit(tenant, LIMITS, claim(), both)).toMatchObject({
        kind: 'job_refused',
        refusal: { kind: 'budget_exceeded', scope: 'monthly', remainingMicroUsd: 0 },
      });
      // Only the day spent: the day's reset admits again, and the refusal says so.
      const dayOnly = reservation({ credential, dailyMicroUsd: PRICE, monthlyMicroUsd: 10 * PRICE });
      expect(await store.admission.admit(`${tenant}-day`, LIMITS, claim(), dayOnly)).toMatchObject({
        kind: 'decided',
      });
      expect(await store.admission.admit(`${tenant}-day`, LIMITS, claim(), dayOnly)).toMatchObject({
        kind: 'job_refused',
        refusal: { kind: 'budget_exceeded', scope: 'daily', remainingMicroUsd: 0 },
      });
    } finally {
      await store.close();
    }
  });

  test("a tenant's and a credential's caps on jobs in flight; each end frees one slot", async () => {
    const store = await open(kind);
    const credential = `cred-${randomUUID().slice(0, 8)}`;
    const capped = reservation({
      credential,
      monthlyMicroUsd: undefined,
      tenantMaxInFlight: 2,
      credentialMaxInFlight: 3,
    });
    try {
      const first = claim();
      expect((await store.admission.admit('cap-a', [], first, capped)).kind).toBe('decided');
      expect((await store.admission.admit('cap-a', [], claim(), capped)).kind).toBe('decided');
      expect(await store.admission.admit('cap-a', [], claim(), capped)).toMatchObject({
        refusal: { kind: 'too_many_jobs_in_flight', scope: 'tenant', limit: 2 },
      });
      expect((await store.admission.admit('cap-b', [], claim(), capped)).kind).toBe('decided');
      expect(await store.admission.admit('cap-b', [], claim(), capped)).toMatchObject({
        refusal: { kind: 'too_many_jobs_in_flight', scope: 'credential', limit: 3 },
      });
      expect(await store.jobs.credentialJobsInFlight(credential)).toBe(3);
      await store.jobs.settle(
        { requestId: first.requestId, tenantId: 'cap-a', credential },
        { outcome: 'cancelled', record: '{}' },
      );
      expect((await store.admission.admit('cap-b', [], claim(), capped)).kind).toBe('decided');
    } finally {
      await store.close();
    }
  });

  test('a leased job is not leased again within its lease; an ended one is leased to tell its listeners', async () => {
    const store = await open(kind);
    const tenant = `lease-${randomUUID().slice(0, 8)}`;
    try {
      const check = claim();
      await store.admission.admit(tenant, [], check, reservation({ monthlyMicroUsd: undefined }));
      await store.jobs.submitted(check.requestId, 0);
      const leased = await store.jobs.leaseDue(64, 30_000, 100);
      expect(leased.filter((job) => job.requestId === check.requestId)).toHaveLength(1);
      expect(
        (await store.jobs.leaseDue(64, 30_000, 100)).some((job) => job.requestId === check.requestId),
      ).toBe(false);
    } finally {
      await store.close();
    }
  });
});

test('on Redis, a create with budgets and both caps is still one script call', async () => {
  const store = await open('redis');
  try {
    const full = reservation({ dailyMicroUsd: 5 * PRICE, tenantMaxInFlight: 5, credentialMaxInFlight: 5 });
    // The first call defines the script (EVAL); measure the second.
    await store.admission.admit('one-call', LIMITS, claim(), full);
    const commands = await clientCommandsDuring(redis, async () => {
      const result = await store.admission.admit('one-call', LIMITS, claim(), full);
      expect(result.kind).toBe('decided');
    });
    expect(commands.map((command) => (command[0] ?? '').toLowerCase())).toEqual(['evalsha']);
  } finally {
    await store.close();
  }
});

// Regression: a tenant without rate limits took two store calls per create (the claim, then the
// reservation), because an empty list of limits counted as decided without the store.
test('on Redis, a create of a tenant without rate limits is one script call too', async () => {
  const store = await open('redis');
  const tenant = `no-limits-${randomUUID().slice(0, 8)}`;
  try {
    const full = reservation({ dailyMicroUsd: 5 * PRICE, tenantMaxInFlight: 5 });
    await store.admission.admit(tenant, [], claim(), full); // defines the script (EVAL); measured below
    const check = claim();
    const commands = await clientCommandsDuring(redis, async () => {
      expect(await store.admission.admit(tenant, [], check, full)).toEqual({
        kind: 'decided',
        decision: undefined,
        unreserved: undefined,
      });
    });
    expect(commands.map((command) => (command[0] ?? '').toLowerCase())).toEqual(['evalsha']);
    expect(await store.ownership.owns(check.requestId, tenant)).toBe(true);
    expect((await store.jobs.usage(tenant, 5 * PRICE, undefined)).jobsInFlight).toBe(2);
  } finally {
    await store.close();
  }
});

test('on Redis, the jobs whose creates were answered in one turn are marked submitted in one script call', async () => {
  const store = await open('redis');
  const tenant = `turn-${randomUUID().slice(0, 8)}`;
  try {
    const checks = Array.from({ length: 5 }, claim);
    for (const check of checks) {
      await store.admission.admit(tenant, [], check, reservation({ monthlyMicroUsd: undefined }));
    }
    // One of them settled before its create's answer landed: not followed, and the others still are.
    const [settledFirst, ...followed] = checks as [ReturnType<typeof claim>, ...ReturnType<typeof claim>[]];
    await store.jobs.settle(
      { requestId: settledFirst.requestId, tenantId: tenant, credential: 'shared' },
      { outcome: 'refused' },
    );
    await store.jobs.submitted(randomUUID(), 0); // defines the script (EVAL); measured below: EVALSHA
    const commands = await clientCommandsDuring(redis, async () => {
      await Promise.all(checks.map((check) => store.jobs.submitted(check.requestId, 0)));
    });
    expect(commands.map((command) => [(command[0] ?? '').toLowerCase(), command[2]])).toEqual([
      ['evalsha', '2'],
    ]);
    const leased = (await store.jobs.leaseDue(64, 30_000, 100)).map((job) => job.requestId);
    expect(followed.every((check) => leased.includes(check.requestId))).toBe(true);
    expect(leased).not.toContain(settledFirst.requestId);
  } finally {
    await store.close();
  }
});

// Regression: the memory book reads its oldest job from its first record; an id reserved again kept its
// place with a younger admission, and the oldest job's age (which an alert watches) read too young.
test('in memory, the oldest job is the oldest admission, also after an id is reserved again', async () => {
  let nowMs = 1_000;
  const book = createMemoryJobBook({
    answerWaitMs: 1_000,
    leaseMs: 30_000,
    maxAgeMs: 86_400_000,
    now: () => nowMs,
  });
  const tenant = 'oldest';
  const [first, second] = [randomUUID(), randomUUID()];
  await book.reserve(tenant, first, reservation({ monthlyMicroUsd: undefined }));
  nowMs = 2_000;
  await book.reserve(tenant, second, reservation({ monthlyMicroUsd: undefined }));
  expect(await book.backlog()).toEqual({ count: 2, oldestAdmittedAtMs: 1_000 });
  nowMs = 3_000;
  await book.reserve(tenant, first, reservation({ monthlyMicroUsd: undefined }));
  expect(await book.backlog()).toEqual({ count: 2, oldestAdmittedAtMs: 2_000 });
});

describe('a store that cannot answer', () => {
  async function openUnreachable(failMode: 'open' | 'closed'): Promise<GatewayStore> {
    return openStore(
      { ...storeConfig('redis', 'redis://127.0.0.1:1'), failMode },
      {
        logger: pino({ level: 'silent' }),
        metrics: createMetrics(new Registry()),
        jobs: JOB_OPTIONS,
      },
    );
  }

  test('failMode open admits a create without its reservation, and says so', async () => {
    const store = await openUnreachable('open');
    try {
      const result = await store.admission.admit('open-tenant', LIMITS, claim(), reservation());
      // Sent to a store that never answered: it may have run (as far as the gateway can tell), so the
      // job is adopted later only if the store has no record of it (adopt-unreserved.ts).
      expect(result).toMatchObject({
        kind: 'decided',
        decision: { outcome: 'admitted' },
        unreserved: 'maybe_taken',
      });
    } finally {
      await store.close();
    }
  });

  test('failMode closed refuses it (503 store_unavailable)', async () => {
    const store = await openUnreachable('closed');
    try {
      const result = await store.admission
        .admit('closed-tenant', LIMITS, claim(), reservation())
        .catch((error: unknown) => error);
      // Refused at the claim already, before anything could be reserved.
      expect(result).toMatchObject({ code: 'store_unavailable', status: 503 });
    } finally {
      await store.close();
    }
  });
});
