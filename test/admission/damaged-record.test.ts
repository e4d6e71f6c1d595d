// Regression: one request id whose key holds something else than a record (a hash, a list… written by
// something sharing the key space, or damaged) made its batched admission call throw, which tripped the
// store breaker every tenant shares: inexact limits for all in fail-open, 503 for all in fail-closed, again
// on every repeat of that id. Now the damaged id is refused alone (409 on a create, 404 on a read, nothing
// charged), on every path: one script call per turn, the two-step way, a Redis Cluster, and through a
// gateway. Fail-closed throughout: a trip would show as store_unavailable.
import { randomUUID } from 'node:crypto';
import { Cluster, type Redis } from 'ioredis';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema.ts';
import { createMetrics } from '../../src/observability/metrics.ts';
import type { LimitRequest } from '../../src/ratelimit/types.ts';
import type { GatewayStore } from '../../src/store/gateway-store.ts';
import { openStore } from '../../src/store/open-store.ts';
import { startGatewayHarness } from '../support/gateway-harness.ts';
import {
  startRedisCluster,
  startRedisServer,
  type RedisCluster,
  type RedisServer,
} from '../support/redis-server.ts';
import { callRequest, createImage, inUse, notFound, submission } from '../ownership/ownership-client.ts';

const KEY_PREFIX = 'gengate:';
const TWO_PER_MINUTE: LimitRequest[] = [{ id: 'requests', limit: 2, windowSeconds: 60, cost: 1 }];
const TAKEN = { kind: 'request_id_taken', outcome: { kind: 'owned_by_another_tenant' } };
const NOT_OWNED = { kind: 'not_owned' };

/** Every type a key can hold other than a string, each written the way another program would. */
const DAMAGE: Record<string, (client: Redis | Cluster, key: string) => Promise<unknown>> = {
  hash: (client, key) => client.hset(key, 'not', 'a record'),
  list: (client, key) => client.rpush(key, 'alpha'),
  set: (client, key) => client.sadd(key, 'alpha'),
  zset: (client, key) => client.zadd(key, 1, 'alpha'),
  stream: (client, key) => client.xadd(key, '*', 'tenant', 'alpha'),
};

interface OpenedStore {
  store: GatewayStore;
  registry: Registry;
  warnings: string[];
}

async function open(redis: GatewayConfig['store']['redis']): Promise<OpenedStore> {
  const warnings: string[] = [];
  const logger = pino(
    { level: 'warn' },
    {
      write(line: string) {
        warnings.push((JSON.parse(line) as { msg: string }).msg);
      },
    },
  );
  const registry = new Registry();
  const store = await openStore(
    { kind: 'redis', redis, failMode: 'closed', replicas: 1, ownershipTtlSeconds: 3600 },
    { logger, metrics: createMetrics(registry) },
  );
  return { store, registry, warnings };
}

async function breakerTrips(registry: Registry): Promise<number | undefined> {
  const metric = await registry.getSingleMetric('gengate_store_breaker_trips_total')?.get();
  return metric?.values[0]?.value;
}

const KEY_WITHOUT_RECORD_WARNING =
  "a request id's key holds no record (another type); the id is refused as taken";

describe('on a single Redis', () => {
  let redis: RedisServer;
  let opened: OpenedStore;
  beforeAll(async () => {
    redis = await startRedisServer();
    opened = await open({ url: redis.url, keyPrefix: KEY_PREFIX, commandTimeoutMs: 2_000 });
  });
  afterAll(async () => {
    try {
      await opened.store.close();
    } finally {
      await redis.stop();
    }
  });

  test.each(Object.keys(DAMAGE))(
    'an id whose key holds a %s is refused alone in its call; the other tenants are decided exactly and the breaker stays closed',
    async (type) => {
      const { store, registry } = opened;
      const tenant = (name: string) => `${name}-${type}`;
      const [damaged, sound, owned] = [randomUUID(), randomUUID(), randomUUID()];
      await DAMAGE[type]!(redis.client(), `${KEY_PREFIX}request:${damaged}`);
      expect(await store.admission.admit(tenant('owner'), [], { requestId: owned, intent: 'claim' })).toEqual(
        { kind: 'decided', decision: undefined, unreserved: undefined },
      );

      // One turn, so one script call: the damaged id's create and read among other tenants' requests.
      const results = await Promise.all([
        store.admission.admit(tenant('a'), TWO_PER_MINUTE, { requestId: randomUUID(), intent: 'claim' }),
        store.admission.admit(tenant('damaging'), TWO_PER_MINUTE, { requestId: damaged, intent: 'claim' }),
        store.admission.admit(tenant('damaging'), TWO_PER_MINUTE, { requestId: damaged, intent: 'own' }),
        store.admission.admit(tenant('b'), TWO_PER_MINUTE, { requestId: sound, intent: 'claim' }),
        store.admission.admit(tenant('owner'), TWO_PER_MINUTE, { requestId: owned, intent: 'own' }),
      ]);
      const admittedExactly = { kind: 'decided', decision: { outcome: 'admitted', exact: true } };
      expect(results).toMatchObject([admittedExactly, TAKEN, NOT_OWNED, admittedExactly, admittedExactly]);

      expect(store.limiter.degraded).toBe(false);
      expect(await breakerTrips(registry)).toBe(0);
      // The refused requests charged nothing, and the damaged key is left as it was.
      const peek = await store.limiter.check(tenant('damaging'), [{ ...TWO_PER_MINUTE[0]!, cost: 0 }], {
        peek: true,
      });
      expect(peek.limits[0]?.remaining).toBe(2);
      expect(await redis.client().type(`${KEY_PREFIX}request:${damaged}`)).toBe(type);
      // A pending claim, with its attempt's token (`<tenant> ~<token>`).
      expect(await redis.client().get(`${KEY_PREFIX}request:${sound}`)).toMatch(
        new RegExp(`^${tenant('b')} ~\\S+$`),
      );
    },
  );

  test('the two-step way (no limit applies) refuses the damaged id alone too, and says which key', async () => {
    const { store, registry, warnings } = opened;
    const damaged = randomUUID();
    await DAMAGE.list!(redis.client(), `${KEY_PREFIX}request:${damaged}`);
    warnings.length = 0;
    expect(await store.admission.admit('two-step', [], { requestId: damaged, intent: 'claim' })).toEqual(
      TAKEN,
    );
    expect(await store.admission.admit('two-step', [], { requestId: damaged, intent: 'own' })).toEqual(
      NOT_OWNED,
    );
    expect(await store.ownership.owns(damaged, 'two-step')).toBe(false);
    expect(warnings).toEqual([
      KEY_WITHOUT_RECORD_WARNING,
      KEY_WITHOUT_RECORD_WARNING,
      KEY_WITHOUT_RECORD_WARNING,
    ]);
    expect(store.limiter.degraded).toBe(false);
    expect(await breakerTrips(registry)).toBe(0);
  });
});

describe('on a Redis Cluster (always the two-step way)', () => {
  let cluster: RedisCluster;
  let opened: OpenedStore;
  beforeAll(async () => {
    cluster = await startRedisCluster();
    opened = await open({
      nodes: cluster.nodes,
      url: 'redis://unused',
      keyPrefix: KEY_PREFIX,
      commandTimeoutMs: 2_000,
    });
  });
  afterAll(async () => {
    try {
      await opened.store.close();
    } finally {
      await cluster.stop();
    }
  });

  test('a damaged id is refused alone and the others are decided exactly, the breaker closed', async () => {
    const { store, registry } = opened;
    const damaged = randomUUID();
    const client = new Cluster(cluster.nodes);
    try {
      await DAMAGE.hash!(client, `${KEY_PREFIX}request:${damaged}`);
    } finally {
      client.disconnect();
    }
    const results = await Promise.all([
      store.admission.admit('cluster-a', TWO_PER_MINUTE, { requestId: damaged, intent: 'claim' }),
      store.admission.admit('cluster-a', TWO_PER_MINUTE, { requestId: damaged, intent: 'own' }),
      store.admission.admit('cluster-b', TWO_PER_MINUTE, { requestId: randomUUID(), intent: 'claim' }),
    ]);
    expect(results).toMatchObject([
      TAKEN,
      NOT_OWNED,
      { kind: 'decided', decision: { outcome: 'admitted', exact: true } },
    ]);
    expect(store.limiter.degraded).toBe(false);
    expect(await breakerTrips(registry)).toBe(0);
  });
});

test('through a fail-closed gateway: 409 on the damaged id’s create, 404 on its poll, nothing forwarded, others served', async () => {
  const redis = await startRedisServer();
  const harness = await startGatewayHarness({
    storeYaml: `{ kind: redis, failMode: closed, redis: { url: "${redis.url}" } }`,
    alphaLimitsYaml: `[{ id: requests, routes: ['*'], cost: requests, limit: 100, windowSeconds: 60 }]`,
  });
  try {
    const [damaged, sound] = [randomUUID(), randomUUID()];
    await DAMAGE.hash!(redis.client(), `${KEY_PREFIX}request:${damaged}`);
    const [create, poll, other] = await Promise.all([
      createImage(harness, 'alpha', { requestId: damaged }),
      callRequest(harness, 'alpha', 'GET', `/v1/images/generations/${damaged}`),
      createImage(harness, 'gamma', { requestId: sound }),
    ]);
    expect(create.status).toBe(409);
    expect(create.body).toEqual(inUse(damaged));
    expect(create.headers.get('x-request-id')).not.toBeNull();
    expect(poll.status).toBe(404);
    expect(poll.body).toEqual(notFound(damaged));
    expect(other.status).toBe(200);
    expect(other.body).toEqual(submission(sound));
    expect(harness.simulator.received.map((request) => request.body.toString('utf8'))).toEqual([
      `{"requestId":"${sound}"}`,
    ]);
    const scrape = await harness.metrics.registry.metrics();
    expect(scrape).toMatch(/^gengate_store_breaker_trips_total 0$/m);
    expect(scrape).toMatch(/^gengate_store_degraded 0$/m);
    const warning = harness.logLines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((line) => line.msg === KEY_WITHOUT_RECORD_WARNING);
    expect(warning).toMatchObject({ requestId: damaged, key: `${KEY_PREFIX}request:${damaged}` });
  } finally {
    await harness.close();
    await redis.stop();
  }
});
