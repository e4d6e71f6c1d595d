// Contract section 8, store failures, through the gateway: fail-open keeps serving without headers it
// cannot stand behind, fail-closed answers 503 store_unavailable (and readiness drops), and both come
// back by themselves when Redis does. No request waits on a dead store.
import pino from 'pino';
import { describe, expect, test } from 'vitest';
import { buildAdminApp } from '../../src/admin/app.ts';
import { createReadiness } from '../../src/admin/readiness.ts';
import { useGatewayOnRedisPerTest, type GatewayHarness } from '../support/gateway-harness.ts';
import { waitFor } from '../support/wait-for.ts';

const LIMITS = '[{ id: requests, routes: ["*"], cost: requests, limit: 1000, windowSeconds: 60 }]';
// commandTimeoutMs is 100 by default; a request may wait that long once, never more.
const SLOWEST_ACCEPTABLE_MS = 600;

const startGatewayOnRedis = useGatewayOnRedisPerTest();

function start(failMode: 'open' | 'closed') {
  return startGatewayOnRedis({
    storeYaml: (url) => `{ kind: redis, failMode: ${failMode}, redis: { url: "${url}" } }`,
    alphaLimitsYaml: LIMITS,
  });
}

async function timedCall(gateway: GatewayHarness) {
  const started = performance.now();
  const response = await fetch(`${gateway.url}/v1/account/keys`, {
    headers: { authorization: `Bearer ${gateway.keys.alpha}` },
  });
  const body = await response.json();
  return { response, body, ms: performance.now() - started };
}

describe('Redis killed and restarted', () => {
  test('fail-open: serves without rate-limit headers, then exact headers again', async () => {
    const { redis, harness } = await start('open');
    expect((await timedCall(harness)).response.headers.get('x-ratelimit-limit')).toBe('1000');

    await redis.kill();
    const during = await Promise.all(Array.from({ length: 20 }, () => timedCall(harness)));
    for (const { response, ms } of during) {
      expect(response.status).toBe(200);
      expect(ms).toBeLessThan(SLOWEST_ACCEPTABLE_MS);
    }
    await waitFor(
      'the fallback',
      async () => (await timedCall(harness)).response.headers.get('ratelimit') === null,
    );
    const degraded = await timedCall(harness);
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
      (await timedCall(harness)).response.headers.has('x-ratelimit-limit'),
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
      await waitFor('store_unavailable', async () => (await timedCall(harness)).response.status === 503);
      const { response, body, ms } = await timedCall(harness);
      expect(ms).toBeLessThan(SLOWEST_ACCEPTABLE_MS);
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
      await waitFor('recovery', async () => (await timedCall(harness)).response.status === 200);
      expect((await admin.inject('/readyz')).statusCode).toBe(200);
      // One outage, one trip of the breaker.
      expect(await storeSeries()).toContain('gengate_store_breaker_trips_total 1');
    } finally {
      await admin.close();
    }
  });
});

test('Redis frozen (DEBUG SLEEP): no request waits much longer than the command timeout', async () => {
  const { redis, harness } = await startGatewayOnRedis({
    redisArgs: ['--enable-debug-command', 'yes'],
    storeYaml: (url) => `{ kind: redis, failMode: open, redis: { url: "${url}" } }`,
    alphaLimitsYaml: LIMITS,
  });
  await timedCall(harness);
  const sleeper = redis.client();
  const frozen = sleeper.call('DEBUG', 'SLEEP', '2');
  const during = await Promise.all(Array.from({ length: 10 }, () => timedCall(harness)));
  for (const { response, ms } of during) {
    expect(response.status).toBe(200);
    expect(ms).toBeLessThan(SLOWEST_ACCEPTABLE_MS);
  }
  await frozen;
});
