// docs/operations.md#gengateupstreamcredentialrejected: the upstream refusing gengate's own credential is the operator's problem, found before a
// tenant meets it. The real process checks every credential with the upstream at start-up and again
// when a token file is rotated, logs the result, and marks a refused one on /metrics; an upstream that
// cannot be reached leaves the question open and never stops start-up.
import { randomUUID } from 'node:crypto';
import { rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll, expect, test } from 'vitest';
import type { SimulatorServer } from '../../src/simulator/server.ts';
import { freePort } from '../support/free-port.ts';
import {
  oneTenantConfig,
  startGatewayProcess,
  startSharedTokenSimulator,
  writeTempConfig,
  type GatewayProcess,
} from '../support/gateway-process.ts';
import { CANARY_UPSTREAM_TOKENS, canaryTenantKey } from '../support/secret-canary.ts';
import { waitFor } from '../support/wait-for.ts';

const REFUSED = 'the upstream refused the credential; see the runbook of GengateUpstreamCredentialRejected';
// The simulator accepts only the `shared` token; the `research` one is a token it does not know.
const WRONG_TOKEN = CANARY_UPSTREAM_TOKENS.research;

let simulator: SimulatorServer;
let gateway: GatewayProcess | undefined;
beforeAll(async () => {
  simulator = await startSharedTokenSimulator({ queuedMs: 0, processingMs: 0 });
});
afterEach(async () => {
  gateway?.signal('SIGTERM');
  await gateway?.exited;
  gateway = undefined;
});
afterAll(async () => {
  await simulator.close();
});

async function metric(name: string): Promise<string | undefined> {
  const text = await (await fetch(`${gateway?.adminUrl}/metrics`)).text();
  return text.split('\n').find((line) => line.startsWith(`${name}{credential="shared"}`));
}

/** Waits until a scrape shows `expected`: /metrics is rendered at most once a second (src/admin/app.ts). */
async function expectMetric(name: string, expected: string): Promise<void> {
  await waitFor(`${expected} on /metrics`, async () => (await metric(name)) === expected);
}

function configText(upstreamUrl: string, key: { sha256: string; prefix: string }): string {
  return oneTenantConfig({ upstreamUrl, keys: [key] });
}

function logged(message: string) {
  return gateway?.lines.find((line) => line.msg === message && line.credential === 'shared');
}

test('a token the upstream refuses: logged and marked at start-up, tenants told it is not their key', async () => {
  const key = canaryTenantKey();
  const path = await writeTempConfig(configText(simulator.url, key));
  gateway = await startGatewayProcess(path, { SHARED_TOKEN: WRONG_TOKEN });
  await waitFor('the start-up check', () => logged(REFUSED) !== undefined, 20_000);
  expect(logged(REFUSED)).toMatchObject({ level: 50, upstreamStatus: 401 });
  await expectMetric(
    'gengate_upstream_credential_rejected',
    'gengate_upstream_credential_rejected{credential="shared"} 1',
  );
  const response = await fetch(`${gateway.gatewayUrl}/v1/images/generations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
    body: '{}',
  });
  expect(response.status).toBe(502);
  expect(await response.json()).toEqual({
    status: 502,
    error: {
      code: 'upstream_credential_rejected',
      type: 'upstream_error',
      message: "the generation service refused this gateway's own credential; your API key is not at fault",
    },
  });
  await expectMetric(
    'gengate_upstream_credential_rejections_total',
    'gengate_upstream_credential_rejections_total{credential="shared"} 2',
  );
});

test('an upstream that cannot be reached: start-up goes on, the check is logged as not made', async () => {
  const key = canaryTenantKey();
  const upstreamUrl = `http://127.0.0.1:${await freePort()}`;
  const path = await writeTempConfig(configText(upstreamUrl, key));
  gateway = await startGatewayProcess(path, { SHARED_TOKEN: CANARY_UPSTREAM_TOKENS.shared });
  const notChecked = 'upstream credential not checked: the upstream could not be asked';
  await waitFor('the start-up check', () => logged(notChecked) !== undefined, 20_000);
  expect(logged(notChecked)).toMatchObject({ level: 40 });
  expect((await fetch(`${gateway.adminUrl}/readyz`)).status).toBe(200);
  await expectMetric(
    'gengate_upstream_credential_rejected',
    'gengate_upstream_credential_rejected{credential="shared"} 0',
  );
});

test('a rotated token file is checked again: refused, then accepted', async () => {
  const key = canaryTenantKey();
  const path = await writeTempConfig(
    configText(simulator.url, key).replace(
      '{ shared: { env: SHARED_TOKEN } }',
      '{ shared: { file: token } }',
    ),
  );
  const tokenPath = join(dirname(path), 'token');
  await writeFile(tokenPath, WRONG_TOKEN);
  gateway = await startGatewayProcess(path);
  await waitFor('the start-up check', () => logged(REFUSED) !== undefined, 20_000);
  // Replaced whole, as a Kubernetes secret mount swaps it.
  const next = `${tokenPath}.${randomUUID()}`;
  await writeFile(next, CANARY_UPSTREAM_TOKENS.shared);
  await rename(next, tokenPath);
  await waitFor(
    'the check of the new token',
    () => logged('upstream credential accepted') !== undefined,
    20_000,
  );
  await expectMetric(
    'gengate_upstream_credential_rejected',
    'gengate_upstream_credential_rejected{credential="shared"} 0',
  );
});
