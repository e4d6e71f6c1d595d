// Configuration identity (docs/deploy.md#changing-the-configuration), on the real process: gengate_config_info{hash} names the
// tenant configuration a replica applies (the same for two replicas given the same tenants, whatever the
// file's layout), and gengate_config_last_reload_success_timestamp_seconds and
// gengate_config_last_reload_successful follow each reload. The reloads are the ones the chart's live mode
// relies on (docs/deploy.md, "Changing the configuration"): SIGHUP, and the kubelet's swap of a mounted
// ConfigMap's `..data` symlink.
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

const TOKEN = CANARY_UPSTREAM_TOKENS.shared;
const key = canaryTenantKey();
let simulator: SimulatorServer;
const gateways: GatewayProcess[] = [];
const folders: string[] = [];

beforeAll(async () => {
  simulator = await startSharedTokenSimulator();
});

afterAll(async () => {
  for (const gateway of gateways) {
    gateway.signal('SIGTERM');
    await gateway.exited;
  }
  await simulator.close();
  for (const folder of folders) await rm(folder, { recursive: true, force: true });
});

function configWith(maximumSamples: number): string {
  return oneTenantConfig({
    upstreamUrl: simulator.url,
    keys: [key],
    tenantYaml: [`policy: { samples: { maximum: ${maximumSamples}, onViolation: clamp } }`],
  });
}

async function start(configPath: string): Promise<GatewayProcess> {
  const gateway = await startGatewayProcess(configPath, { SHARED_TOKEN: TOKEN });
  gateways.push(gateway);
  return gateway;
}

interface Identity {
  hashes: string[];
  successful: number;
  lastSuccess: number;
}

async function identityOf(gateway: GatewayProcess): Promise<Identity> {
  const text = await (await fetch(`${gateway.adminUrl}/metrics`)).text();
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
  return {
    hashes: [...text.matchAll(/^gengate_config_info\{hash="([0-9a-f]+)"\} 1$/gm)].map((match) => match[1]!),
    successful: value('gengate_config_last_reload_successful'),
    lastSuccess: value('gengate_config_last_reload_success_timestamp_seconds'),
  };
}

/**
 * The identity once a scrape shows it changed from `before`: /metrics is rendered at most once a second
 * (src/admin/app.ts), so a scrape right after a reload may still show the configuration before it.
 */
async function identityChangedFrom(gateway: GatewayProcess, before: Identity): Promise<Identity> {
  let identity = before;
  await waitFor('a scrape after the reload', async () => {
    identity = await identityOf(gateway);
    return JSON.stringify(identity) !== JSON.stringify(before);
  });
  return identity;
}

function reloads(gateway: GatewayProcess, message: string): number {
  return gateway.lines.filter((line) => line.msg === message).length;
}

test('two replicas given the same tenants report the same hash, whatever the layout of their files', async () => {
  const startedAt = Date.now() / 1000;
  const first = await start(await writeTempConfig(configWith(4)));
  const second = await start(await writeTempConfig(`# the same tenants, laid out apart\n\n${configWith(4)}`));
  const [one, other] = [await identityOf(first), await identityOf(second)];
  expect(one.hashes).toHaveLength(1);
  expect(other.hashes).toEqual(one.hashes);
  // Start-up counts as the first configuration applied.
  expect(one.successful).toBe(1);
  expect(one.lastSuccess).toBeGreaterThanOrEqual(Math.floor(startedAt));
});

test('SIGHUP applies a new file and reports its hash; a refused one keeps the hash and marks the reload failed', async () => {
  const configPath = await writeTempConfig(configWith(4));
  const gateway = await start(configPath);
  const started = await identityOf(gateway);

  const APPLIED = 'configuration reloaded';
  const REFUSED = 'configuration reload refused; keeping the current configuration';
  /** Writes the file, sends SIGHUP and waits for the reload's log line; returns the identity then. */
  const reloadWith = async (text: string, outcome: string): Promise<Identity> => {
    const [before, identityBefore] = [reloads(gateway, outcome), await identityOf(gateway)];
    await writeFile(configPath, text);
    gateway.signal('SIGHUP');
    await waitFor(outcome, () => reloads(gateway, outcome) > before);
    // Every reload here changes the identity: a new hash, or the last reload marked failed or not.
    return identityChangedFrom(gateway, identityBefore);
  };

  const reloaded = await reloadWith(configWith(2), APPLIED);
  expect(reloaded.hashes).toHaveLength(1);
  expect(reloaded.hashes).not.toEqual(started.hashes);
  expect(reloaded.successful).toBe(1);
  expect(reloaded.lastSuccess).toBeGreaterThanOrEqual(started.lastSuccess);

  expect(await reloadWith('tenants: [ { id: "Not Valid" } ]\n', REFUSED)).toEqual({
    ...reloaded,
    successful: 0,
  });

  const recovered = await reloadWith(configWith(3), APPLIED);
  expect(recovered.successful).toBe(1);
  expect(recovered.hashes).not.toEqual(reloaded.hashes);
});

test("a mounted ConfigMap's folder (the chart's live mode): the kubelet's ..data swap is applied by itself", async () => {
  // The kubelet's layout: gengate.yaml -> ..data/gengate.yaml, ..data -> a timestamped folder; an update
  // writes a new folder and renames a new ..data link over the old one.
  const mount = await mkdtemp(join(tmpdir(), 'gengate-configmap-'));
  folders.push(mount);
  const writeVersion = async (name: string, text: string) => {
    await mkdir(join(mount, name));
    await writeFile(join(mount, name, 'gengate.yaml'), text);
    await symlink(name, join(mount, '..data_tmp'));
    await rename(join(mount, '..data_tmp'), join(mount, '..data'));
  };
  await writeVersion('..2026_01_01_00_00_00.1', configWith(4));
  await symlink('..data/gengate.yaml', join(mount, 'gengate.yaml'));
  const gateway = await start(join(mount, 'gengate.yaml'));
  const started = await identityOf(gateway);

  await writeVersion('..2026_01_01_00_01_00.2', configWith(2));
  await waitFor('the reload of the swapped file', () => reloads(gateway, 'configuration reloaded') === 1);
  const reloaded = await identityChangedFrom(gateway, started);
  expect(reloaded.hashes).toHaveLength(1);
  expect(reloaded.hashes).not.toEqual(started.hashes);
});
