// Admission (src/admission): a request's id and its charge decided together, both or neither. The same
// cases run on a single Redis (one script call) and in memory (the sequential way), against real stores;
// the Redis-only cases prove the single round trip and the fallback through the shared breaker (a damaged
// id key, refused alone: damaged-record.test.ts).
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { Registry } from 'prom-client';
import { createMetrics } from '../../src/observability/metrics.ts';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema.ts';
import type { LimitRequest } from '../../src/ratelimit/types.ts';
import type { GatewayStore } from '../../src/store/gateway-store.ts';
import { openStore } from '../../src/store/open-store.ts';
import { clientCommandsDuring, startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { waitFor } from '../support/wait-for.ts';

const TTL_SECONDS = 3600;
const COMMAND_TIMEOUT_MS = 2_000;
const TWO_PER_MINUTE: LimitRequest[] = [{ id: 'requests', limit: 2, windowSeconds: 60, cost: 1 }];
const SUBMISSION = { status: 200, contentType: 'application/json', body: Buffer.from('{"status":200}') };

function storeConfig(kind: 'redis' | 'memory', url = 'redis://127.0.0.1:1'): GatewayConfig['store'] {
  return {
    kind,
    redis: { url, keyPrefix: 'gengate:', commandTimeoutMs: COMMAND_TIMEOUT_MS },
    failMode: 'open',
    replicas: 1,
    ownershipTtlSeconds: TTL_SECONDS,
  };
}

async function open(config: GatewayConfig['store']): Promise<GatewayStore> {
  return openStore(config, { logger: pino({ level: 'silent' }), metrics: createMetrics(new Registry()) });
}

let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedisServer();
});
afterAll(async () => {
  await redis.stop();
});

describe.each(['redis', 'memory'] as const)('admission on %s', (kind) => {
  let store: GatewayStore;
  afterEach(async () => {
    await store.close();
  });
  const start = async () => {
    store = await open(storeConfig(kind, redis.url));
    return store;
  };
  // Each test uses fresh tenant and request ids, so the shared Redis needs no flushing.
  const tenant = () => `t${randomUUID().slice(0, 8)}`;
  const remaining = async (tenantId: string) => {
    const peek = await store.limiter.check(tenantId, [{ ...TWO_PER_MINUTE[0]!, cost: 0 }], { peek: true });
    return peek.limits[0]?.remaining;
  };

  test('a create claims its id and is charged in the same decision', async () => {
    const { admission, ownership } = await start();
    const [owner, other] = [tenant(), tenant()];
    const requestId = randomUUID();
    const result = await admission.admit(owner, TWO_PER_MINUTE, { requestId, intent: 'claim' });
    expect(result).toMatchObject({ kind: 'decided', decision: { outcome: 'admitted', exact: true } });
    expect(await remaining(owner)).toBe(1);
    expect(await ownership.owns(requestId, owner)).toBe(true);
    expect(await ownership.owns(requestId, other)).toBe(false);
  });

  test('a refused charge leaves the id unclaimed', async () => {
    const { admission, ownership } = await start();
    const owner = tenant();
    for (let index = 0; index < 2; index++) {
      await admission.admit(owner, TWO_PER_MINUTE, { requestId: randomUUID(), intent: 'claim' });
    }
    const requestId = randomUUID();
    const refused = await admission.admit(owner, TWO_PER_MINUTE, { requestId, intent: 'claim' });
    expect(refused).toMatchObject({ kind: 'decided', decision: { outcome: 'rate_limited' } });
    expect(await ownership.owns(requestId, owner)).toBe(false);
    // Unclaimed, so another tenant may take it.
    const other = await admission.admit(tenant(), TWO_PER_MINUTE, { requestId, intent: 'claim' });
    expect(other).toMatchObject({ kind: 'decided', decision: { outcome: 'admitted' } });
  });

  test('a taken id charges nothing: another tenant’s, pending, or completed (replayed)', async () => {
    const { admission, ownership } = await start();
    const [owner, other] = [tenant(), tenant()];
    const requestId = randomUUID();
    await admission.admit(owner, TWO_PER_MINUTE, { requestId, intent: 'claim' });

    expect(await admission.admit(other, TWO_PER_MINUTE, { requestId, intent: 'claim' })).toEqual({
      kind: 'request_id_taken',
      outcome: { kind: 'owned_by_another_tenant' },
    });
    expect(await admission.admit(owner, TWO_PER_MINUTE, { requestId, intent: 'claim' })).toEqual({
      kind: 'request_id_taken',
      outcome: { kind: 'pending' },
    });
    await ownership.complete(requestId, owner, SUBMISSION);
    expect(await admission.admit(owner, TWO_PER_MINUTE, { requestId, intent: 'claim' })).toEqual({
      kind: 'request_id_taken',
      outcome: { kind: 'replay', response: SUBMISSION },
    });
    expect(await remaining(owner)).toBe(1);
    expect(await remaining(other)).toBe(2);
  });

  test('reading an id: its owner is charged; another tenant and an unknown id are not, and get not_owned', async () => {
    const { admission } = await start();
    const [owner, other] = [tenant(), tenant()];
    const requestId = randomUUID();
    await admission.admit(owner, [], { requestId, intent: 'claim' });

    const read = await admission.admit(owner, TWO_PER_MINUTE, { requestId, intent: 'own' });
    expect(read).toMatchObject({ kind: 'decided', decision: { outcome: 'admitted' } });
    expect(await remaining(owner)).toBe(1);
    expect(await admission.admit(other, TWO_PER_MINUTE, { requestId, intent: 'own' })).toEqual({
      kind: 'not_owned',
    });
    const unknown = { requestId: randomUUID(), intent: 'own' } as const;
    expect(await admission.admit(other, TWO_PER_MINUTE, unknown)).toEqual({ kind: 'not_owned' });
    expect(await remaining(other)).toBe(2);
  });

  test('no limit applies: the id alone decides', async () => {
    const { admission, ownership } = await start();
    const owner = tenant();
    const requestId = randomUUID();
    expect(await admission.admit(owner, [], { requestId, intent: 'claim' })).toEqual({
      kind: 'decided',
      decision: undefined,
      unreserved: undefined,
    });
    expect(await ownership.owns(requestId, owner)).toBe(true);
  });
});

describe('admission on a single Redis', () => {
  test('is one script call: the id is checked, the limits charged and the id claimed inside it', async () => {
    const store = await open(storeConfig('redis', redis.url));
    const monitorClient = redis.client();
    const monitor = await monitorClient.monitor();
    const commands: { name: string; source: string }[] = [];
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      commands.push({ name: (args[0] ?? '').toLowerCase(), source: source === 'lua' ? 'script' : 'client' });
    });
    try {
      // The second request finds the limit's state the first one left; admitted, it rewrites it with a
      // TTL, so the state's TTL is not read (it is only for a refused charge, see src/store/redis/scripts/includes/gcra.lua).
      for (const requestId of [randomUUID(), randomUUID()]) {
        await store.admission.admit('one-call', TWO_PER_MINUTE, { requestId, intent: 'claim' });
      }
      await monitorClient.echo('end');
      await waitFor('the monitor to see the end marker', () => commands.some(({ name }) => name === 'echo'));
      const fromGateway = commands.filter(({ source, name }) => source === 'client' && name !== 'echo');
      expect(fromGateway.map(({ name }) => name)).toEqual([
        expect.stringMatching(/^evalsha$|^eval$/),
        expect.stringMatching(/^evalsha$|^eval$/),
      ]);
      const oneAdmission = [
        'time', // once per call: every request of a call is charged at the same moment
        'get', // the id's record
        'get', // the limit's state
        'set', // the charge
        'set', // the claim
      ];
      expect(commands.filter(({ source }) => source === 'script').map(({ name }) => name)).toEqual([
        ...oneAdmission,
        ...oneAdmission,
      ]);
    } finally {
      monitor.disconnect();
      await store.close();
    }
  });

  test("the requests of one turn are admitted in one call, each with its own outcome, after the turn's answers", async () => {
    const store = await open(storeConfig('redis', redis.url));
    try {
      const [fresh, taken, answered, othersId] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
      for (const [requestId, owner] of [
        [taken, 'batch'],
        [answered, 'batch'],
        [othersId, 'someone-else'],
      ] as const) {
        expect(
          await store.admission.admit(owner, TWO_PER_MINUTE, { requestId, intent: 'claim' }),
        ).toMatchObject({
          kind: 'decided',
        });
      }
      let outcomes: unknown[] = [];
      const sent = await clientCommandsDuring(redis, async () => {
        // In one turn: a new id (refused: the tenant's two a minute are used), an id still pending, an
        // answer being recorded then a repeat of its id, and a read of another tenant's id.
        outcomes = await Promise.all([
          store.admission.admit('batch', TWO_PER_MINUTE, { requestId: fresh, intent: 'claim' }),
          store.admission.admit('batch', TWO_PER_MINUTE, { requestId: taken, intent: 'claim' }),
          store.ownership.complete(answered, 'batch', SUBMISSION),
          store.admission.admit('batch', TWO_PER_MINUTE, { requestId: answered, intent: 'claim' }),
          store.admission.admit('batch', TWO_PER_MINUTE, { requestId: othersId, intent: 'own' }),
        ]);
      });
      const [refused, ...others] = outcomes;
      expect(refused).toMatchObject({ kind: 'decided', decision: { outcome: 'rate_limited', exact: true } });
      expect(others).toEqual([
        { kind: 'request_id_taken', outcome: { kind: 'pending' } },
        undefined,
        { kind: 'request_id_taken', outcome: { kind: 'replay', response: SUBMISSION } },
        { kind: 'not_owned' },
      ]);
      // The record's call, then one admission call carrying the four requests.
      const scripts = sent.filter(([name]) => /^evalsha$|^eval$/i.test(name ?? ''));
      // EVALSHA sha numkeys key… arg…: the record has one key; the admissions two each (record, limit),
      // and the number of admissions as their first argument.
      expect(scripts.map((args) => args[2])).toEqual(['1', '8']);
      expect(scripts[1]?.[3 + 8]).toBe('4');
    } finally {
      await store.close();
    }
  });

  test('a turn of admissions with 1, 2 and 3 limits and two tenants is decided as one at a time', async () => {
    const store = await open(storeConfig('redis', redis.url));
    const limitsOf = (count: number, perMinute: number): LimitRequest[] =>
      Array.from({ length: count }, (_, index) => ({
        id: `l${index}`,
        limit: perMinute + index,
        windowSeconds: 60,
        cost: index + 1,
      }));
    // Each tenant's limits fill up within the turn: later requests are refused because of earlier ones.
    const shapes = [3, 1, 2, 3, 1, 2, 2, 3, 1].map((count, index) => ({
      count,
      tenant: index % 2 === 0 ? 'even' : 'odd',
    }));
    const decide = async (prefix: string, batched: boolean) => {
      const calls = shapes.map(
        ({ count, tenant }) =>
          () =>
            store.admission.admit(`${prefix}-${tenant}`, limitsOf(count, 4), {
              requestId: randomUUID(),
              intent: 'claim',
            }),
      );
      const results = [];
      if (batched) results.push(...(await Promise.all(calls.map((call) => call()))));
      else for (const call of calls) results.push(await call());
      return results.map((result) => {
        if (result.kind !== 'decided' || result.decision === undefined) throw new Error(result.kind);
        const { outcome, binding, limits, exact } = result.decision;
        return { outcome, exact, binding: binding?.id, remaining: limits.map((limit) => limit.remaining) };
      });
    };
    try {
      const oneAtATime = await decide(`alone-${randomUUID()}`, false);
      expect(oneAtATime.map(({ outcome }) => outcome)).toContain('rate_limited');
      expect(await decide(`batch-${randomUUID()}`, true)).toEqual(oneAtATime);
    } finally {
      await store.close();
    }
  });

  test('more than 64 admissions in a turn take two calls, every one decided', async () => {
    const store = await open(storeConfig('redis', redis.url));
    try {
      const many = [{ id: 'requests', limit: 1_000, windowSeconds: 60, cost: 1 }];
      let results: Awaited<ReturnType<typeof store.admission.admit>>[] = [];
      const sent = await clientCommandsDuring(redis, async () => {
        results = await Promise.all(
          Array.from({ length: 65 }, () =>
            store.admission.admit('sixty-five', many, { requestId: randomUUID(), intent: 'claim' }),
          ),
        );
      });
      expect(results.map((result) => result.kind === 'decided' && result.decision?.outcome)).toEqual(
        Array.from({ length: 65 }, () => 'admitted'),
      );
      const scripts = sent.filter(([name]) => /^evalsha$|^eval$/i.test(name ?? ''));
      // The number of admissions is the first argument after the keys (two per admission).
      expect(scripts.map((args) => args[3 + Number(args[2])])).toEqual(['64', '1']);
    } finally {
      await store.close();
    }
  });

  test('a failing store sends both steps to their fallbacks at once (shared breaker), then recovers', async () => {
    const own = await startRedisServer();
    const store = await open(storeConfig('redis', own.url));
    try {
      await own.kill();
      const requestId = randomUUID();
      const degraded = await store.admission.admit('outage', TWO_PER_MINUTE, { requestId, intent: 'claim' });
      expect(degraded).toMatchObject({ kind: 'decided', decision: { outcome: 'admitted', exact: false } });
      expect(store.limiter.degraded).toBe(true);
      // The fallback claim is this replica's: the same id is pending for its owner, taken for others.
      expect(await store.admission.admit('outage', TWO_PER_MINUTE, { requestId, intent: 'claim' })).toEqual({
        kind: 'request_id_taken',
        outcome: { kind: 'pending' },
      });
      await own.restart();
      await waitFor('the breaker to close', () => !store.limiter.degraded);
      // Written back to the store once it answers again.
      await waitFor('the claim to be written back', async () => {
        return (await own.client().get(`gengate:request:${requestId}`)) === 'outage';
      });
      const after = await store.admission.admit('outage', TWO_PER_MINUTE, {
        requestId: randomUUID(),
        intent: 'claim',
      });
      expect(after).toMatchObject({ kind: 'decided', decision: { outcome: 'admitted', exact: true } });
    } finally {
      await store.close();
      await own.stop();
    }
  });
});
