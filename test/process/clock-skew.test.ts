// docs/rate-limits.md#headers: rate-limit headers come from the store's clock, never a replica's. Two gateway
// processes share one Redis; one runs with its clock an hour behind (test/support/shifted-clock.ts),
// and both must describe the same limit the same way.
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { SimulatorServer } from '../../src/simulator/server.ts';
import {
  oneTenantConfig,
  startGatewayProcess,
  startSharedTokenSimulator,
  writeTempConfig,
  type GatewayProcess,
} from '../support/gateway-process.ts';
import { shiftedClock } from '../support/shifted-clock.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { CANARY_UPSTREAM_TOKENS, canaryTenantKey } from '../support/secret-canary.ts';

const TOKEN = CANARY_UPSTREAM_TOKENS.shared;
const HOUR_SECONDS = 3600;
const key = canaryTenantKey();
let redis: RedisServer;
let simulator: SimulatorServer;
const replicas: GatewayProcess[] = [];

beforeAll(async () => {
  redis = await startRedisServer();
  simulator = await startSharedTokenSimulator();
  const configPath = await writeTempConfig(
    oneTenantConfig({
      upstreamUrl: simulator.url,
      keys: [key],
      store: `{ kind: redis, redis: { url: "${redis.url}", commandTimeoutMs: 2000 } }`,
      tenantYaml: [
        'limits: [{ id: requests, routes: ["*"], cost: requests, limit: 10, windowSeconds: 600 }]',
      ],
    }),
  );
  const env = { SHARED_TOKEN: TOKEN };
  replicas.push(await startGatewayProcess(configPath, env));
  const hourBehind = shiftedClock(-HOUR_SECONDS * 1000);
  replicas.push(await startGatewayProcess(configPath, { ...env, ...hourBehind.env }, hourBehind.nodeArgs));
});

afterAll(async () => {
  for (const replica of replicas) {
    replica.signal('SIGTERM');
    await replica.exited;
  }
  await simulator.close();
  await redis.stop();
});

async function headersFrom(replica: GatewayProcess) {
  const response = await fetch(`${replica.gatewayUrl}/v1/account/keys`, {
    headers: { authorization: `Bearer ${key.key}` },
  });
  expect(response.status).toBe(200);
  return {
    limit: response.headers.get('x-ratelimit-limit'),
    remaining: response.headers.get('x-ratelimit-remaining'),
    reset: Number(response.headers.get('x-ratelimit-reset')),
    rateLimit: response.headers.get('ratelimit'),
  };
}

test('a replica an hour behind gives the same headers as its peer', async () => {
  const [onTime, behind] = replicas as [GatewayProcess, GatewayProcess];
  // pino stamps each log line with the process clock: the second replica really is an hour behind.
  const behindClockMs = behind.lines[0]?.time as number;
  expect(Date.now() - behindClockMs).toBeGreaterThan((HOUR_SECONDS - 60) * 1000);
  // 10 per 600 s: each request pushes "full again" 60 s further out.
  const startedMs = Date.now();
  const first = await headersFrom(onTime);
  const second = await headersFrom(behind);
  const secondsToSecond = Math.ceil((Date.now() - startedMs) / 1000);
  const third = await headersFrom(onTime);
  const nowSeconds = Date.now() / 1000;

  expect([first.remaining, second.remaining, third.remaining]).toEqual(['9', '8', '7']);
  expect(second.limit).toBe('10');
  // Reset is the store's "now" plus 60 s per unit used, rounded up: the replicas agree to the second,
  // and the one whose clock is an hour behind is not an hour off.
  expect(second.reset - first.reset).toBeGreaterThanOrEqual(59);
  expect(second.reset - first.reset).toBeLessThanOrEqual(61);
  expect(third.reset - second.reset).toBeGreaterThanOrEqual(59);
  expect(third.reset - second.reset).toBeLessThanOrEqual(61);
  expect(Math.abs(second.reset - (nowSeconds + 120))).toBeLessThan(5);
  expect(Math.abs(second.reset - (nowSeconds - HOUR_SECONDS + 120))).toBeGreaterThan(HOUR_SECONDS - 10);
  // Full again 120 s after the first charge, counted from the second one: the seconds between them less.
  const [, fullInSeconds] = /^"requests";r=8;t=(\d+)$/.exec(second.rateLimit ?? '') ?? [];
  expect(Number(fullInSeconds)).toBeGreaterThanOrEqual(120 - secondsToSecond);
  expect(Number(fullInSeconds)).toBeLessThanOrEqual(120);
});
