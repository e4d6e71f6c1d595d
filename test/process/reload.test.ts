// docs/configuration.md#reloading: tenants reload without a restart, on SIGHUP or when the file changes; requests in
// flight never see a half-applied configuration; an invalid file is refused and the old one kept.
import { writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { SimulatorServer } from '../../src/simulator/server.ts';
import {
  oneTenantConfig,
  startGatewayProcess,
  startSharedTokenSimulator,
  writeTempConfig,
  type GatewayProcess,
} from '../support/gateway-process.ts';
import { waitFor } from '../support/wait-for.ts';
import { CANARY_UPSTREAM_TOKENS, canaryTenantKey } from '../support/secret-canary.ts';

const TOKEN = CANARY_UPSTREAM_TOKENS.shared;
const firstKey = canaryTenantKey();
const addedKey = canaryTenantKey();
let simulator: SimulatorServer;
let gateway: GatewayProcess;
let configPath: string;

function configWith(maximumSamples: number, keys: { sha256: string; prefix: string }[]): string {
  return oneTenantConfig({
    upstreamUrl: simulator.url,
    keys,
    tenantYaml: [`policy: { samples: { maximum: ${maximumSamples}, onViolation: clamp } }`],
  });
}

beforeAll(async () => {
  simulator = await startSharedTokenSimulator({ queuedMs: 0, processingMs: 0, requestsPerMinute: 100_000 });
  configPath = await writeTempConfig(configWith(4, [firstKey]));
  gateway = await startGatewayProcess(configPath, { SHARED_TOKEN: TOKEN });
});

afterAll(async () => {
  gateway.signal('SIGTERM');
  await gateway.exited;
  await simulator.close();
});

async function createWith(key: string) {
  const response = await fetch(`${gateway.gatewayUrl}/v1/images/generations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: '{"samples":8}',
  });
  await response.arrayBuffer();
  return { status: response.status, policy: response.headers.get('gengate-policy') };
}

function reloads(result: string) {
  return gateway.lines.filter((line) =>
    result === 'success'
      ? line.msg === 'configuration reloaded'
      : line.msg === 'configuration reload refused; keeping the current configuration',
  ).length;
}

test('a reload under load applies whole, to the next requests, and an invalid file changes nothing', async () => {
  const before = { clampedTo4: 'samples=clamped;from=8;to=4', clampedTo2: 'samples=clamped;from=8;to=2' };
  let reloaded = false;
  const seen: { status: number; policy: string | null }[] = [];
  // Two clients send without pause while the file is replaced and SIGHUP arrives.
  const load = Promise.all(
    [0, 1].map(async () => {
      let afterReload = 0;
      while (afterReload < 20) {
        seen.push(await createWith(firstKey.key));
        if (reloaded) afterReload += 1;
      }
    }),
  );
  await waitFor('20 forwarded requests', () => seen.length >= 20);
  await writeFile(configPath, configWith(2, [firstKey, addedKey]));
  gateway.signal('SIGHUP');
  await waitFor('a successful reload', () => reloads('success') >= 1);
  reloaded = true;
  await load;

  expect(seen.filter((answer) => answer.status !== 200)).toEqual([]);
  expect(new Set(seen.map((answer) => answer.policy))).toEqual(
    new Set([before.clampedTo4, before.clampedTo2]),
  );
  // Once the new policy answered, the old one never came back.
  const firstNew = seen.findIndex((answer) => answer.policy === before.clampedTo2);
  expect(seen.slice(firstNew).filter((answer) => answer.policy === before.clampedTo4)).toHaveLength(0);
  expect((await createWith(addedKey.key)).status).toBe(200);

  await writeFile(configPath, 'tenants: [ { id: "Not Valid" } ]\n');
  gateway.signal('SIGHUP');
  await waitFor('a refused reload', () => reloads('error') >= 1);
  expect(await createWith(firstKey.key)).toEqual({ status: 200, policy: before.clampedTo2 });
  // /metrics is rendered at most once a second (src/admin/app.ts).
  await waitFor('the refused reload in /metrics', async () =>
    /gengate_config_reloads_total\{result="error"\} [1-9]/.test(
      await (await fetch(`${gateway.adminUrl}/metrics`)).text(),
    ),
  );
  const metrics = await (await fetch(`${gateway.adminUrl}/metrics`)).text();
  expect(metrics).toMatch(/gengate_config_reloads_total\{result="success"\} [1-9]/);
});

test('a tenant a reload adds has its counters at 0 at once, so its first event shows in increase()', async () => {
  const succeeded = reloads('success');
  const teamB = [
    '  - id: team-b',
    '    credential: shared',
    '    keys: []',
    '    limits: [{ id: hourly, routes: ["*"], cost: requests, limit: 100, windowSeconds: 3600 }]',
    '    policy: { mode: shadow, steps: { maximum: 10 } }',
    '',
  ].join('\n');
  await writeFile(configPath, configWith(2, [firstKey]) + teamB);
  gateway.signal('SIGHUP');
  await waitFor('the reload that adds team-b', () => reloads('success') > succeeded);
  // /metrics is rendered at most once a second (src/admin/app.ts).
  let metrics = '';
  await waitFor('team-b in /metrics', async () => {
    metrics = await (await fetch(`${gateway.adminUrl}/metrics`)).text();
    return metrics.includes('tenant="team-b"');
  });
  expect(metrics.split('\n').filter((line) => line.includes('tenant="team-b"'))).toEqual([
    'gengate_usage_images_total{tenant="team-b"} 0',
    'gengate_usage_video_seconds_total{tenant="team-b"} 0',
    'gengate_usage_estimated_cost_usd_total{tenant="team-b"} 0',
    'gengate_usage_reported_cost_usd_total{tenant="team-b"} 0',
    'gengate_policy_actions_total{tenant="team-b",rule="steps",action="clamped",mode="shadow"} 0',
    ...['admitted', 'rate_limited', 'not_charged', 'cost_exceeds_limit'].map(
      (decision) =>
        `gengate_rate_limit_decisions_total{tenant="team-b",limit="hourly",decision="${decision}"} 0`,
    ),
    // The budget and job series too (test/jobs/reload-tenant-series.test.ts: with a budget).
    'gengate_budget_spent_usd_total{tenant="team-b"} 0',
    'gengate_budget_unreserved_admissions_total{tenant="team-b"} 0',
    'gengate_budget_unreserved_dropped_total{tenant="team-b"} 0',
    ...['completed', 'failed', 'cancelled', 'expired'].map(
      (outcome) => `gengate_jobs_finished_total{tenant="team-b",outcome="${outcome}"} 0`,
    ),
    'gengate_budget_reserved_usd{tenant="team-b"} 0',
    'gengate_jobs_in_flight{tenant="team-b"} 0',
  ]);
});

// Regression: a reload whose webhook secret was missing was applied (tenants, policies, keys) while the
// webhooks kept the old tenants' secrets, and counted a success; the same file stops a start.
test('a reload whose webhook secret is missing is refused whole, as the same file is at start', async () => {
  const before = { success: reloads('success'), error: reloads('error') };
  const withWebhook = oneTenantConfig({
    upstreamUrl: simulator.url,
    keys: [firstKey, addedKey],
    tenantYaml: [
      'webhooks: [{ id: done, url: "http://127.0.0.1:9/hook", secret: { env: UNSET_SECRET }, events: [job.completed] }]',
    ],
  });
  await writeFile(configPath, withWebhook);
  gateway.signal('SIGHUP');
  await waitFor('a refused reload', () => reloads('error') > before.error);
  expect(reloads('success')).toBe(before.success);
  const refused = gateway.lines.filter(
    (line) => line.msg === 'configuration reload refused; keeping the current configuration',
  );
  expect(refused.at(-1)?.problems).toEqual([
    { path: 'tenants[0].webhooks[0].secret', message: 'environment variable UNSET_SECRET is not set' },
  ]);
  // The policy of the last good file still applies: samples clamped to 2, not lifted by the refused one.
  expect(await createWith(firstKey.key)).toEqual({ status: 200, policy: 'samples=clamped;from=8;to=2' });
});
