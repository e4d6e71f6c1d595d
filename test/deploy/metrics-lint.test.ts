// The exposition Prometheus scrapes passes `promtool check metrics` for every gengate_* series: counters
// end in _total, units are base units, every family has HELP. A real gengate (built-in simulator, Redis
// store) serves traffic of every kind first, so every family has series to check, not just a TYPE line.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { generateTenantKey } from '../../src/auth/keys.ts';
import { freePort } from '../support/free-port.ts';
import { startGatewayProcess, writeTempConfig, type GatewayProcess } from '../support/gateway-process.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { waitFor } from '../support/wait-for.ts';

const TOKEN = 'upstream_token_for_metrics_lint';
const IMAGES = '/v1/images/generations';
const VIDEOS = '/v1/videos/generations';
const enforced = generateTenantKey();
const shadowed = generateTenantKey();

function configText(simulatorPort: number, redisUrl: string, extraTenant = ''): string {
  const keys = (key: { sha256: string; prefix: string }) =>
    `[{ sha256: "${key.sha256}", prefix: "${key.prefix}" }]`;
  return `
server: { host: 127.0.0.1, port: 0 }
admin: { host: 127.0.0.1, port: 0 }
upstream:
  baseUrl: http://127.0.0.1:${simulatorPort}
  timeoutMs: 500
  credentials: { shared: { env: SHARED_TOKEN }, research: { env: RESEARCH_TOKEN } }
simulator: { enabled: true, host: 127.0.0.1, port: ${simulatorPort}, queuedMs: 0, processingMs: 0 }
store: { kind: redis, redis: { url: "${redisUrl}" } }
tenants:
  - id: enforced
    credential: shared
    keys: ${keys(enforced)}
    policy: { samples: { maximum: 2, onViolation: clamp }, outputTypes: [url], safetyLevel: { minimum: high } }
    limits:
      - { id: requests, routes: ["*"], cost: requests, limit: 12, windowSeconds: 60 }
      - { id: samples, routes: [images.create], cost: samples, limit: 100, windowSeconds: 60 }
  - id: shadowed
    credential: research
    account: passthrough
    keys: ${keys(shadowed)}
    policy: { mode: shadow, steps: { maximum: 10, onViolation: reject } }
${extraTenant}`;
}

interface Running {
  redis: RedisServer;
  gateway: GatewayProcess;
  simulatorPort: number;
  configPath: string;
}
let redis: RedisServer | undefined;
let running: Running | undefined;
beforeAll(async () => {
  redis = await startRedisServer();
  const simulatorPort = await freePort();
  const configPath = await writeTempConfig(configText(simulatorPort, redis.url));
  const gateway = await startGatewayProcess(configPath, {
    SHARED_TOKEN: TOKEN,
    RESEARCH_TOKEN: `${TOKEN}_research`,
  });
  running = { redis, gateway, simulatorPort, configPath };
  await driveTrafficOfEveryKind(running);
});
afterAll(async () => {
  running?.gateway.signal('SIGTERM');
  await running?.gateway.exited;
  await redis?.stop();
});

async function call(
  gateway: GatewayProcess,
  key: string | undefined,
  method: string,
  path: string,
  body?: string,
): Promise<number> {
  const response = await fetch(`${gateway.gatewayUrl}${path}`, {
    method,
    headers: {
      ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body }),
  });
  await response.arrayBuffer();
  return response.status;
}

async function setUpstreamFault(simulatorPort: number, fault: object): Promise<void> {
  const response = await fetch(`http://127.0.0.1:${simulatorPort}/__simulator/faults`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(fault),
  });
  expect(response.status).toBeLessThan(300);
}

async function driveTrafficOfEveryKind({ gateway, redis, simulatorPort, configPath }: Running) {
  const key = enforced.key;
  const requestId = crypto.randomUUID();
  const statuses = [
    // Forwarded work, rewritten by policy, then polled: usage, costs, upstream durations.
    await call(gateway, key, 'POST', IMAGES, `{"samples":4,"requestId":"${requestId}"}`),
    await call(gateway, key, 'GET', `${IMAGES}/${requestId}`),
    await call(gateway, key, 'POST', VIDEOS, '{"duration":5}'),
    await call(gateway, key, 'GET', '/v1/account/usage'),
    await call(gateway, shadowed.key, 'POST', IMAGES, '{"steps":40}'),
    await call(gateway, shadowed.key, 'GET', '/v1/account/keys'),
    // Refusals: validation, policy, authentication, routing, method.
    await call(gateway, key, 'POST', IMAGES, '{"samples":0}'),
    await call(gateway, key, 'POST', IMAGES, '{"outputType":"base64"}'),
    await call(gateway, undefined, 'GET', '/v1/account/usage'),
    await call(gateway, key, 'GET', '/nowhere'),
    await call(gateway, key, 'PUT', IMAGES),
  ];
  expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 400, 403, 401, 404, 405]);
  // The upstream timing out, then unreachable.
  // Matched to the keys route: the tracker's polls of the jobs created above must not take them.
  const keysRoute = { method: 'GET', pathPrefix: '/v1/account/keys' };
  await setUpstreamFault(simulatorPort, { delayMs: 2_000, times: 1, match: keysRoute });
  expect(await call(gateway, shadowed.key, 'GET', '/v1/account/keys')).toBe(504);
  await setUpstreamFault(simulatorPort, { dropConnection: true, times: 1, match: keysRoute });
  expect(await call(gateway, shadowed.key, 'GET', '/v1/account/keys')).toBe(502);
  // The rate limit runs out.
  await waitFor(
    'a rate-limited request',
    async () => (await call(gateway, key, 'GET', '/v1/account/keys')) === 429,
  );
  // A reload that adds a tenant.
  const reloaded = () => gateway.lines.filter((line) => line.msg === 'configuration reloaded').length;
  await writeFile(
    configPath,
    configText(
      simulatorPort,
      redis.url,
      '  - { id: added, credential: shared, keys: [], limits: [{ id: hourly, routes: ["*"], cost: requests, limit: 5, windowSeconds: 3600 }] }\n',
    ),
  );
  // The file watch and SIGHUP may each reload it: at least one reload, then.
  gateway.signal('SIGHUP');
  await waitFor('the reload', () => reloaded() >= 1);
}

/** What `promtool check metrics` prints about an exposition (it exits 3 when it has anything to say). */
async function promtoolCheckMetrics(exposition: string): Promise<{ output: string }> {
  const promtool = spawn('promtool', ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  promtool.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  promtool.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  promtool.stdin.end(exposition);
  await once(promtool, 'exit');
  return { output };
}

test('promtool check metrics reports nothing about any gengate_* series', async () => {
  if (running === undefined) throw new Error('gengate did not start');
  const response = await fetch(`${running.gateway.adminUrl}/metrics`);
  expect(response.status).toBe(200);
  const exposition = await response.text();
  // The traffic reached every family the gateway defines.
  for (const family of [
    'gengate_http_requests_total{',
    'gengate_http_request_duration_seconds_bucket{',
    'gengate_upstream_request_duration_seconds_bucket{',
    'gengate_overhead_seconds_bucket{',
    'gengate_inflight_requests ',
    'gengate_validation_failures_total{',
    'gengate_policy_actions_total{tenant="shadowed",rule="steps",action="rejected",mode="shadow"} 1',
    'gengate_rate_limit_decisions_total{tenant="enforced",limit="requests",decision="rate_limited"}',
    'gengate_store_operation_duration_seconds_bucket{',
    'gengate_store_errors_total{',
    'gengate_store_degraded ',
    'gengate_store_breaker_trips_total ',
    'gengate_config_reloads_total{result="error"} 0',
    'gengate_usage_images_total{tenant="enforced"} 2',
    'gengate_usage_video_seconds_total{tenant="enforced"} 5',
    'gengate_usage_estimated_cost_usd_total{',
    'gengate_usage_reported_cost_usd_total{',
    'gengate_upstream_errors_total{route="account.keys",reason="timeout"} 1',
    'gengate_upstream_errors_total{route="account.keys",reason="unavailable"} 1',
    'gengate_heap_size_limit_bytes ',
    'gengate_build_info{',
    'gengate_config_info{hash="',
    'gengate_config_last_reload_success_timestamp_seconds ',
    'gengate_config_last_reload_successful 1',
    'gengate_config_max_replicas ',
    'gengate_memory_limit_bytes ',
    'gengate_upstream_connections_in_use ',
    'gengate_upstream_connections_limit ',
    'gengate_rate_limit_decisions_total{tenant="added",limit="hourly",decision="admitted"} 0',
  ]) {
    expect(exposition).toContain(family);
  }
  expect(exposition).toMatch(/\ngengate_config_reloads_total\{result="success"\} [1-9]/);
  const { output } = await promtoolCheckMetrics(exposition);
  const complaints = output.split('\n').filter((line) => line !== '');
  expect(complaints.filter((line) => line.includes('gengate_'))).toEqual([]);
  // What promtool says otherwise is about prom-client's default gauges, whose names are not ours to change.
  expect(complaints).toEqual(
    ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'].map(
      (name) => `${name} non-counter metrics should not have "_total" suffix`,
    ),
  );
});
