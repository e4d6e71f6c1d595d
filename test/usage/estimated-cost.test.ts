// docs/usage.md#get-v1accountusage: account.usage's estimatedCostUsd is the expected cost that admission
// reserves (docs/budgets.md#pricing), from `pricing`, for images and videos alike. Regression: images were
// estimated at 0 whatever pricing.images said, and videos at built-in prices, not pricing.videoUsdPerSecond.
import { afterEach, expect, test } from 'vitest';
import type { SimulatorServer } from '../../src/simulator/server.ts';
import type { UsageReport } from '../../src/usage/meter.ts';
import {
  oneTenantConfig,
  startGatewayProcess,
  startSharedTokenSimulator,
  writeTempConfig,
  type GatewayProcess,
} from '../support/gateway-process.ts';
import { CANARY_UPSTREAM_TOKENS, canaryTenantKey } from '../support/secret-canary.ts';
import { waitFor } from '../support/wait-for.ts';

const KEY = canaryTenantKey();
let simulator: SimulatorServer | undefined;
let gateway: GatewayProcess | undefined;

afterEach(async () => {
  gateway?.signal('SIGTERM');
  await gateway?.exited;
  await simulator?.close();
});

interface UsageAnswer extends UsageReport {
  budget: { monthly: { reservedUsd: number } | null };
}

/** A gateway whose tenant team-a has `tenantYaml`, with `pricing` and jobs that stay reserved. */
async function startWith(pricing: string, tenantYaml: string[]): Promise<GatewayProcess> {
  simulator = await startSharedTokenSimulator();
  const config =
    oneTenantConfig({ upstreamUrl: simulator.url, keys: [KEY], tenantYaml }) +
    // The tracker's first poll an hour after a create: every job stays reserved at its estimate.
    `jobs: { firstPollMs: 3600000, maxPollIntervalMs: 3600000 }\npricing: ${pricing}\n`;
  gateway = await startGatewayProcess(await writeTempConfig(config), {
    SHARED_TOKEN: CANARY_UPSTREAM_TOKENS.shared,
  });
  return gateway;
}

async function call(target: GatewayProcess, method: string, path: string, body?: object) {
  const response = await fetch(`${target.gatewayUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${KEY.key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: unknown }).data;
}

/** Waits for team-a's estimated cost counter to read `usd` (/metrics is rendered at most once a second). */
async function estimatedCostCounterReads(target: GatewayProcess, usd: number): Promise<void> {
  const line = `gengate_usage_estimated_cost_usd_total{tenant="team-a"} ${usd}`;
  await waitFor(line, async () => {
    const metrics = await (await fetch(`${target.adminUrl}/metrics`)).text();
    return metrics.split('\n').includes(line);
  });
}

test('estimatedCostUsd is what admission reserves: images priced per sample, videos by their tier', async () => {
  const target = await startWith(
    '{ images: [{ model: "vendor@*", usdPerSample: 0.004 }, { model: "*", usdPerSample: 0.01 }],' +
      ' videoUsdPerSecond: { 480p: 0.007, 720p: 0.014, 1080p: 0.031 } }',
    ['budget: { monthlyUsd: 10 }'],
  );
  await call(target, 'POST', '/v1/images/generations', { samples: 3 }); // 3 × 0.01
  await call(target, 'POST', '/v1/images/generations', { model: 'vendor@fast', samples: 2 }); // 2 × 0.004
  await call(target, 'POST', '/v1/images/generations', { model: 'other@slow' }); // 1 × 0.01
  await call(target, 'POST', '/v1/videos/generations', { duration: 5 }); // 5 × 0.007 (480p, no size)
  const hd = { duration: 4, dimensions: { width: 960, height: 960 } };
  await call(target, 'POST', '/v1/videos/generations', hd); // 4 × 0.014
  const usage = (await call(target, 'GET', '/v1/account/usage')) as UsageAnswer;

  // 0.03 + 0.008 + 0.01 + 0.035 + 0.056, summed exactly.
  expect(usage.currentMonth).toMatchObject({ imagesRequested: 6, estimatedCostUsd: 0.139 });
  expect(usage.lifetime.estimatedCostUsd).toBe(0.139);
  expect(usage.budget.monthly?.reservedUsd).toBe(usage.currentMonth.estimatedCostUsd);
  await estimatedCostCounterReads(target, 0.139);
});

test('an image create whose model no pricing.images entry matches is estimated at 0', async () => {
  const target = await startWith('{ images: [{ model: "vendor@*", usdPerSample: 0.004 }] }', []);
  await call(target, 'POST', '/v1/images/generations', { samples: 3 }); // no model: no price
  await call(target, 'POST', '/v1/images/generations', { model: 'other@slow' }); // no price
  await call(target, 'POST', '/v1/images/generations', { model: 'vendor@fast', samples: 2 }); // 2 × 0.004
  const usage = (await call(target, 'GET', '/v1/account/usage')) as UsageAnswer;

  expect(usage.currentMonth).toMatchObject({ imagesRequested: 6, estimatedCostUsd: 0.008 });
  await estimatedCostCounterReads(target, 0.008);
});
