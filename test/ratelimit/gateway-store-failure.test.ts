// Store failures through the gateway (docs/rate-limits.md#store-failures): fail-open keeps serving without
// headers it cannot stand behind, fail-closed answers 503 store_unavailable (and readiness drops), and
// both come back by themselves when Redis does. No request waits on a dead or frozen store: each one is
// answered while Redis is still down or still asleep, whatever the machine's speed.
import pino from 'pino';
import { describe, expect, test } from 'vitest';
import { buildAdminApp } from '../../src/admin/app.ts';
import { createReadiness } from '../../src/admin/readiness.ts';
import { useGatewayOnRedisPerTest, type GatewayHarness } from '../support/gateway-harness.ts';
import { waitFor } from '../support/wait-for.ts';

const LIMITS = '[{ id: requests, routes: ["*"], cost: requests, limit: 1000, windowSeconds: 60 }]';
// commandTimeoutMs is 100 by default: a request answered while Redis sleeps this long did not wait for it.
const FROZEN_SECONDS = 3;

const startGatewayOnRedis = useGatewayOnRedisPerTest();

function start(failMode: 'open' | 'closed') {
  return startGatewayOnRedis({
    storeYaml: (url) => `{ kind: redis, failMode: ${failMode}, redis: { url: "${url}" } }`,
    alphaLimitsYaml: LIMITS,
  });
}

async function call(gateway: GatewayHarness) {
  const response = await fetch(`${gateway.url}/v1/account/keys`, {
    headers: { authorization: `Bearer ${gateway.keys.alpha}` },
  });
  const body: unknown = await response.json();
  return { response, body };
}

describe('Redis killed and restarted', () => {
  test('fail-open: serves without rate-limit headers, then exact headers again', async () => {
    const { redis, harness } = await start('open');
    expect((await call(harness)).response.headers.get('x-ratelimit-limit')).toBe('1000');

    await redis.kill();
    // Answered while Redis is dead (it is restarted only after): none waits for it to come back.
    const during = await Promise.all(Array.from({ length: 20 }, () => call(harness)));
    for (const { response } of during) expect(response.status).toBe(200);
    await waitFor(
      'the fallback',
      async () => (await call(harness)).response.headers.get('ratelimit') === null,
    );
    const degraded = await call(harness);
    expect(degraded.response.status).toBe(200);
    for (const name of [
      'x-ratelimit-limit',
      'x-ratelimit-remaining',
      'x-ratelimit-reset',
      'ratelimit',
      'ratelimit-policy',
    ]) {
      expect(degraded.response.headers.get(name)).toBeNull();
    }

    await redis.restart();
    await waitFor('exact decisions', async () =>
      (await call(harness)).response.headers.has('x-ratelimit-limit'),
    );
  });

  test('fail-closed: 503 store_unavailable with Retry-After and readiness down, then recovery', async () => {
    const { redis, harness } = await start('closed');
    const readiness = createReadiness({ storeAvailable: () => !harness.limiter.degraded });
    readiness.markReady();
    const admin = buildAdminApp({ logger: pino({ level: 'silent' }), metrics: harness.metrics, readiness });
    const storeSeries = async () =>
      (await admin.inject('/metrics')).body
        .split('\n')
        .filter((line) =>
          /^gengate_(store_errors|store_breaker_trips|rate_limit_decisions)_total/.test(line),
        );
    try {
      expect((await admin.inject('/readyz')).statusCode).toBe(200);
      // Every store operation and every verdict a fail-closed store gives start at 0.
      expect(await storeSeries()).toEqual(
        [
          ...['admitted', 'rate_limited', 'not_charged', 'cost_exceeds_limit', 'store_unavailable'].map(
            (decision) =>
              `gengate_rate_limit_decisions_total{tenant="alpha",limit="requests",decision="${decision}"}`,
          ),
          ...['admission', 'rate_limit_check', 'ping', 'ownership', 'usage_flush', 'usage_read', 'jobs'].map(
            (operation) => `gengate_store_errors_total{operation="${operation}"}`,
          ),
          'gengate_store_breaker_trips_total',
        ].map((series) => `${series} 0`),
      );
      await redis.kill();
      await waitFor('store_unavailable', async () => (await call(harness)).response.status === 503);
      const { response, body } = await call(harness);
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('1');
      expect(body).toEqual({
        status: 503,
        error: {
          code: 'store_unavailable',
          type: 'unavailable_error',
          message: 'the rate-limit store is unavailable; retry shortly',
        },
      });
      expect((await admin.inject('/readyz')).statusCode).toBe(503);

      await redis.restart();
      await waitFor('recovery', async () => (await call(harness)).response.status === 200);
      expect((await admin.inject('/readyz')).statusCode).toBe(200);
      // One outage, one trip of the breaker (/metrics is at most a second old).
      await waitFor('the trip in /metrics', async () =>
        (await storeSeries()).includes('gengate_store_breaker_trips_total 1'),
      );
    } finally {
      await admin.close();
    }
  });
});

test('Redis frozen (DEBUG SLEEP): every request is answered while Redis still sleeps', async () => {
  const { redis, harness } = await startGatewayOnRedis({
    redisArgs: ['--enable-debug-command', 'yes'],
    storeYaml: (url) => `{ kind: redis, failMode: open, redis: { url: "${url}" } }`,
    alphaLimitsYaml: LIMITS,
  });
  await call(harness);
  const sleeper = redis.client();
  let awake = false;
  const frozen = sleeper.call('DEBUG', 'SLEEP', String(FROZEN_SECONDS)).then(() => {
    awake = true;
  });
  const during = await Promise.all(Array.from({ length: 10 }, () => call(harness)));
  for (const { response } of during) expect(response.status).toBe(200);
  expect(awake).toBe(false);
  await frozen;
});
