// docs/operations.md, "Starting at 0", and docs/budgets.md#metrics-and-alerts: a counter whose label values
// come from the configuration starts at 0 for each of them. A tenant that a configuration reload adds gets
// its budget and job series at once, as a tenant configured at start-up does (src/gateway/tenant-series.ts),
// and the gauges read from the store follow the reloaded tenants and budgets. Regression: the job metrics
// knew only the tenants of the start-up file.
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
import { CANARY_UPSTREAM_TOKENS, canaryTenantKey } from '../support/secret-canary.ts';
import { waitFor } from '../support/wait-for.ts';

const KEY = canaryTenantKey();
let simulator: SimulatorServer;
let gateway: GatewayProcess;
let configPath: string;

// The tracker's first poll an hour after a create: a job stays reserved for the whole test.
const JOBS_AND_PRICING = [
  'jobs: { firstPollMs: 3600000, maxPollIntervalMs: 3600000 }',
  'pricing: { images: [{ model: "*", usdPerSample: 0.01 }] }',
  '',
].join('\n');

function configWith(teamAMonthlyUsd: number, moreTenants: string[] = []): string {
  return (
    oneTenantConfig({
      upstreamUrl: simulator.url,
      keys: [KEY],
      tenantYaml: [`budget: { monthlyUsd: ${teamAMonthlyUsd} }`],
    }) +
    moreTenants.join('\n') +
    JOBS_AND_PRICING
  );
}

beforeAll(async () => {
  simulator = await startSharedTokenSimulator();
  configPath = await writeTempConfig(configWith(1));
  gateway = await startGatewayProcess(configPath, { SHARED_TOKEN: CANARY_UPSTREAM_TOKENS.shared });
});

afterAll(async () => {
  gateway.signal('SIGTERM');
  await gateway.exited;
  await simulator.close();
});

const reloads = () => gateway.lines.filter((line) => line.msg === 'configuration reloaded').length;

/** /metrics once it shows `line` (it is rendered at most once a second, src/admin/app.ts). */
async function metricsShowing(line: string): Promise<string> {
  let text = '';
  await waitFor(`${line} in /metrics`, async () => {
    text = await (await fetch(`${gateway.adminUrl}/metrics`)).text();
    return text.split('\n').includes(line);
  });
  return text;
}

function budgetAndJobSeries(metrics: string, tenant: string): string[] {
  return metrics
    .split('\n')
    .filter((line) => /^gengate_(budget|jobs)_/.test(line) && line.includes(`tenant="${tenant}"`));
}

test('a tenant a reload adds has its budget and job series at 0 at once, and a reloaded budget is read', async () => {
  const created = await fetch(`${gateway.gatewayUrl}/v1/images/generations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY.key}`, 'content-type': 'application/json' },
    body: '{"samples":1}',
  });
  expect(created.status).toBe(200);
  await created.arrayBuffer();
  const ratioOfTeamA = (ratio: string) =>
    `gengate_budget_used_ratio{tenant="team-a",scope="monthly"} ${ratio}`;
  await metricsShowing(ratioOfTeamA('0.01'));

  const teamB = [
    '  - id: team-b',
    '    credential: shared',
    '    keys: []',
    '    budget: { dailyUsd: 5 }',
    '',
  ];
  await writeFile(configPath, configWith(2, teamB));
  gateway.signal('SIGHUP');
  await waitFor('the reload that adds team-b', () => reloads() === 1);

  // Every series of team-b is created by the reload, its usage counters among them.
  const metrics = await metricsShowing('gengate_usage_images_total{tenant="team-b"} 0');
  expect(budgetAndJobSeries(metrics, 'team-b')).toEqual([
    'gengate_budget_spent_usd_total{tenant="team-b"} 0',
    'gengate_budget_unreserved_admissions_total{tenant="team-b"} 0',
    'gengate_budget_unreserved_dropped_total{tenant="team-b"} 0',
    ...['completed', 'failed', 'cancelled', 'expired'].map(
      (outcome) => `gengate_jobs_finished_total{tenant="team-b",outcome="${outcome}"} 0`,
    ),
    'gengate_budget_reserved_usd{tenant="team-b"} 0',
    'gengate_budget_used_ratio{tenant="team-b",scope="daily"} 0',
    'gengate_jobs_in_flight{tenant="team-b"} 0',
  ]);
  // The 0.01 reserved at admission, now against a monthly budget of 2.
  await metricsShowing(ratioOfTeamA('0.005'));
});
