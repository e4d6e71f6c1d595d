// The records of the answers that land in one turn of the event loop (src/store/redis/send-per-turn.ts): on a
// single Redis one script call writes them all, each with exactly the outcome it would have had alone,
// and a failing call sends every one of them to the fail-open path; on a Cluster each record goes alone,
// since one script may touch only one slot.
import { randomUUID } from 'node:crypto';
import { Cluster } from 'ioredis';
import pino from 'pino';
import { Registry } from 'prom-client';
import { createMetrics } from '../../src/observability/metrics.ts';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema.ts';
import type { SubmissionResponse } from '../../src/ownership/store.ts';
import type { GatewayStore } from '../../src/store/gateway-store.ts';
import { openStore } from '../../src/store/open-store.ts';
import {
  clientCommandsDuring,
  startRedisCluster,
  startRedisServer,
  type RedisCluster,
  type RedisServer,
} from '../support/redis-server.ts';
import { waitFor } from '../support/wait-for.ts';

const KEY_PREFIX = 'gengate:';

function storeConfig(redis: GatewayConfig['store']['redis']): GatewayConfig['store'] {
  return { kind: 'redis', redis, failMode: 'open', replicas: 1, ownershipTtlSeconds: 3600 };
}

function open(config: GatewayConfig['store']): Promise<GatewayStore> {
  return openStore(config, { logger: pino({ level: 'silent' }), metrics: createMetrics(new Registry()) });
}

function answer(requestId: string): SubmissionResponse {
  return {
    status: 200,
    contentType: 'application/json',
    body: Buffer.from(`{"status":200,"data":{"requestId":"${requestId}"}}`),
  };
}

/** Claims each id for its tenant, then completes them all in one turn, as answers landing together. */
async function claimThenCompleteInOneTurn(store: GatewayStore, ids: readonly [string, string][]) {
  for (const [requestId, tenant] of ids) {
    expect(await store.ownership.claim(requestId, tenant)).toEqual({ kind: 'claimed' });
  }
  await Promise.all(
    ids.map(([requestId, tenant]) => store.ownership.complete(requestId, tenant, answer(requestId))),
  );
}

describe('on a single Redis', () => {
  let redis: RedisServer;
  let store: GatewayStore;
  beforeAll(async () => {
    redis = await startRedisServer();
    store = await open(storeConfig({ url: redis.url, keyPrefix: KEY_PREFIX, commandTimeoutMs: 2_000 }));
  });
  afterAll(async () => {
    // Whatever failed in beforeAll, the Redis it started goes.
    try {
      await store.close();
    } finally {
      await redis.stop();
    }
  });

  test('the answers of one turn are recorded in one script call, each replayable by its owner', async () => {
    const ids = Array.from({ length: 20 }, (_, index): [string, string] => [randomUUID(), `t${index % 3}`]);
    const sent = await clientCommandsDuring(redis, () => claimThenCompleteInOneTurn(store, ids));
    // 20 claims one by one, then one call that carries the 20 records.
    const records = sent.slice(ids.length);
    expect(records).toHaveLength(1);
    expect(records[0]?.[0]).toMatch(/^evalsha$|^eval$/);
    expect(records[0]?.[2]).toBe('20');
    for (const [requestId, tenant] of ids) {
      expect(await store.ownership.claim(requestId, tenant)).toEqual({
        kind: 'replay',
        response: answer(requestId),
      });
      expect(await store.ownership.claim(requestId, 'other')).toEqual({ kind: 'owned_by_another_tenant' });
    }
  });

  test('a record whose id another tenant holds is left alone, and the rest of its call is written', async () => {
    const [taken, free] = [randomUUID(), randomUUID()];
    expect(await store.ownership.claim(taken, 'holder')).toEqual({ kind: 'claimed' });
    expect(await store.ownership.claim(free, 'alpha')).toEqual({ kind: 'claimed' });
    await Promise.all([
      store.ownership.complete(taken, 'alpha', answer(taken)),
      store.ownership.complete(free, 'alpha', answer(free)),
    ]);
    // Still the holder's pending claim (with its attempt's token).
    expect(await redis.client().get(`${KEY_PREFIX}request:${taken}`)).toMatch(/^holder ~\S+$/);
    expect(await store.ownership.claim(free, 'alpha')).toEqual({ kind: 'replay', response: answer(free) });
  });

  test('a record lives as long as a claim, whatever its place in the call', async () => {
    const ids = Array.from({ length: 3 }, (): [string, string] => [randomUUID(), 'alpha']);
    await claimThenCompleteInOneTurn(store, ids);
    for (const [requestId] of ids) {
      const ttlMs = await redis.client().pttl(`${KEY_PREFIX}request:${requestId}`);
      expect(ttlMs).toBeGreaterThan(3_590_000);
      expect(ttlMs).toBeLessThanOrEqual(3_600_000);
    }
  });

  test('an answer recorded in a turn is seen by a claim issued later in that turn', async () => {
    const requestId = randomUUID();
    expect(await store.ownership.claim(requestId, 'alpha')).toEqual({ kind: 'claimed' });
    const completed = store.ownership.complete(requestId, 'alpha', answer(requestId));
    const repeat = store.ownership.claim(requestId, 'alpha');
    await completed;
    expect(await repeat).toEqual({ kind: 'replay', response: answer(requestId) });
  });

  test('a key that holds no record is left alone without failing the others in its call', async () => {
    const [damaged, sound] = [randomUUID(), randomUUID()];
    await redis.client().hset(`${KEY_PREFIX}request:${damaged}`, 'not', 'a record');
    expect(await store.ownership.claim(sound, 'alpha')).toEqual({ kind: 'claimed' });
    await Promise.all([
      store.ownership.complete(damaged, 'alpha', answer(damaged)),
      store.ownership.complete(sound, 'alpha', answer(sound)),
    ]);
    expect(await redis.client().type(`${KEY_PREFIX}request:${damaged}`)).toBe('hash');
    // Written to Redis itself: a failed call would also replay, from the fail-open memory.
    expect(store.limiter.degraded).toBe(false);
    expect(await redis.client().get(`${KEY_PREFIX}request:${sound}`)).toMatch(/^alpha \{/);
  });

  test('at most 64 records per call', async () => {
    const ids = Array.from({ length: 100 }, (): [string, string] => [randomUUID(), 'alpha']);
    const sent = await clientCommandsDuring(redis, () => claimThenCompleteInOneTurn(store, ids));
    expect(sent.slice(ids.length).map((command) => command[2])).toEqual(['64', '36']);
  });
});

test('a failing call sends each of its records to the fail-open path, written back once Redis answers', async () => {
  const redis = await startRedisServer();
  const store = await open(storeConfig({ url: redis.url, keyPrefix: KEY_PREFIX, commandTimeoutMs: 2_000 }));
  try {
    const ids = Array.from({ length: 5 }, (): string => randomUUID());
    for (const requestId of ids)
      expect(await store.ownership.claim(requestId, 'alpha')).toEqual({ kind: 'claimed' });
    await redis.kill();
    await Promise.all(
      ids.map((requestId) => store.ownership.complete(requestId, 'alpha', answer(requestId))),
    );
    // Meanwhile this replica answers repeats from its own memory.
    for (const requestId of ids) {
      expect(await store.ownership.claim(requestId, 'alpha')).toEqual({
        kind: 'replay',
        response: answer(requestId),
      });
    }
    await redis.restart();
    const client = redis.client();
    await waitFor('every record to be written back', async () => {
      const stored = await Promise.all(
        ids.map((requestId) => client.get(`${KEY_PREFIX}request:${requestId}`)),
      );
      return stored.every((record) => record?.startsWith('alpha {') === true);
    });
  } finally {
    await store.close();
    await redis.stop();
  }
});

test('closing the store sends the answers recorded in its last turn', async () => {
  const redis = await startRedisServer();
  const store = await open(storeConfig({ url: redis.url, keyPrefix: KEY_PREFIX, commandTimeoutMs: 2_000 }));
  const requestId = randomUUID();
  try {
    expect(await store.ownership.claim(requestId, 'alpha')).toEqual({ kind: 'claimed' });
    const completed = store.ownership.complete(requestId, 'alpha', answer(requestId));
    await store.close();
    await completed;
    expect(await redis.client().get(`${KEY_PREFIX}request:${requestId}`)).toMatch(/^alpha \{/);
  } finally {
    await redis.stop();
  }
});

describe('on a Cluster', () => {
  let cluster: RedisCluster;
  let store: GatewayStore;
  beforeAll(async () => {
    cluster = await startRedisCluster();
    store = await open(
      // With nodes, url is not used.
      storeConfig({
        nodes: cluster.nodes,
        url: 'redis://unused',
        keyPrefix: KEY_PREFIX,
        commandTimeoutMs: 2_000,
      }),
    );
  });
  afterAll(async () => {
    try {
      await store.close();
    } finally {
      await cluster.stop();
    }
  });

  test('answers landing together in ids of different slots are each recorded', async () => {
    const ids = Array.from({ length: 12 }, (): [string, string] => [randomUUID(), 'alpha']);
    await claimThenCompleteInOneTurn(store, ids);
    // In the Cluster itself: a failed write would also replay, from this replica's fail-open memory.
    expect(store.limiter.degraded).toBe(false);
    const client = new Cluster(cluster.nodes);
    try {
      const stored = await Promise.all(
        ids.map(([requestId]) => client.get(`${KEY_PREFIX}request:${requestId}`)),
      );
      expect(stored.every((record) => record?.startsWith('alpha {') === true)).toBe(true);
    } finally {
      client.disconnect();
    }
    for (const [requestId] of ids) {
      expect(await store.ownership.claim(requestId, 'alpha')).toEqual({
        kind: 'replay',
        response: answer(requestId),
      });
    }
  });
});
