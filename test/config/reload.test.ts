import { EventEmitter } from 'node:events';
import { mkdir, mkdtemp, open, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseConfigText } from '../../src/config/load.ts';
import {
  sectionsNeedingRestart,
  watchConfig,
  type ConfigWatcher,
  type ConfigWatcherOptions,
} from '../../src/config/reload.ts';
import { tenantConfigHash } from '../../src/config/identity.ts';
import type { GatewayConfig } from '../../src/config/schema.ts';
import { createMetrics } from '../../src/observability/metrics.ts';
import { waitFor } from '../support/wait-for.ts';

const ENV = { MAXAI_TOKEN: 'token' };
const FAST = { debounceMs: 10, pollIntervalMs: 50 };
// For the tests that reload by hand: a file change is seen but never acted on while they run.
const NO_FILE_RELOADS = { debounceMs: 60_000 };

function configWithTenants(...ids: string[]): string {
  const tenants = ids.map((id) => `  - { id: ${id}, credential: shared, keys: [], policy: {} }\n`).join('');
  return `upstream: { credentials: { shared: { env: MAXAI_TOKEN } } }\ntenants:\n${tenants}`;
}
const INVALID_CONFIG = 'server: { port: "eighty" }\nsurprise: 1\n';

interface LogEntry {
  level: 'info' | 'warn' | 'error';
  fields: unknown;
  message: string;
}

const tenantIds = (config: GatewayConfig | undefined) => config?.tenants.map((tenant) => tenant.id);

describe('watchConfig', () => {
  let folder: string;
  let path: string;
  let watcher: ConfigWatcher | undefined;
  let metrics: ReturnType<typeof createMetrics>;
  let signals: EventEmitter;
  let applied: GatewayConfig[];
  let errors: unknown[];
  let logs: LogEntry[];

  beforeEach(async () => {
    folder = await mkdtemp(join(tmpdir(), 'gengate-reload-'));
    path = join(folder, 'gengate.yaml');
    await writeFile(path, configWithTenants('team-a'));
    metrics = createMetrics(new Registry());
    signals = new EventEmitter();
    applied = [];
    errors = [];
    logs = [];
  });
  afterEach(async () => {
    watcher?.close();
    watcher = undefined;
    await rm(folder, { recursive: true, force: true });
  });

  function startWatching(overrides: Partial<ConfigWatcherOptions> = {}): ConfigWatcher {
    watcher = watchConfig({
      path,
      load: () => loadConfig(path, ENV),
      onReload: (config) => {
        applied.push(config);
      },
      onError: (error) => errors.push(error),
      logger: {
        info: (fields: unknown, message: string) => logs.push({ level: 'info', fields, message }),
        warn: (fields: unknown, message: string) => logs.push({ level: 'warn', fields, message }),
        error: (fields: unknown, message: string) => logs.push({ level: 'error', fields, message }),
      } as unknown as ConfigWatcherOptions['logger'],
      metrics,
      signals,
      ...FAST,
      ...overrides,
    });
    return watcher;
  }

  async function reloadCounts(): Promise<Record<string, number>> {
    const { values } = await metrics.configReloads.get();
    return Object.fromEntries(values.map(({ labels, value }) => [String(labels.result), value]));
  }

  it('reload() hands a valid new file to onReload, logs and counts it', async () => {
    const reloader = startWatching(NO_FILE_RELOADS);
    await writeFile(path, configWithTenants('team-a', 'team-b'));
    expect(await reloader.reload()).toBe('success');
    expect(applied.map(tenantIds)).toEqual([['team-a', 'team-b']]);
    expect(Object.isFrozen(applied[0])).toBe(true);
    expect(logs).toEqual([
      { level: 'info', fields: { path, tenants: 2 }, message: 'configuration reloaded' },
    ]);
    expect(await reloadCounts()).toEqual({ success: 1, error: 0 });
    expect(errors).toEqual([]);
  });

  it('refuses an invalid file: logs every problem, counts an error and applies nothing', async () => {
    const reloader = startWatching(NO_FILE_RELOADS);
    await writeFile(path, INVALID_CONFIG);
    expect(await reloader.reload()).toBe('error');
    expect(applied).toEqual([]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(ConfigError);
    expect(logs).toEqual([
      {
        level: 'error',
        fields: {
          path,
          problems: [
            { path: '(root)', message: 'unknown key "surprise"' },
            { path: 'server.port', message: 'must be an integer' },
          ],
        },
        message: 'configuration reload refused; keeping the current configuration',
      },
    ]);
    expect(await reloadCounts()).toEqual({ success: 0, error: 1 });
  });

  it('refuses an emptied file (docs/configuration.md#reloading): counted as a failed reload, the configuration kept', async () => {
    const reloader = startWatching(NO_FILE_RELOADS);
    await writeFile(path, '');
    expect(await reloader.reload()).toBe('error');
    expect(applied).toEqual([]);
    expect(logs).toEqual([
      {
        level: 'error',
        fields: { path, problems: [{ path: '(root)', message: 'the configuration is empty' }] },
        message: 'configuration reload refused; keeping the current configuration',
      },
    ]);
    expect(await reloadCounts()).toEqual({ success: 0, error: 1 });
  });

  it('treats an onReload that throws as a refused reload', async () => {
    const failure = new Error('cannot apply');
    const reloader = startWatching({
      ...NO_FILE_RELOADS,
      onReload: () => {
        throw failure;
      },
    });
    expect(await reloader.reload()).toBe('error');
    expect(errors).toEqual([failure]);
    expect(logs).toEqual([
      {
        level: 'error',
        fields: { path, err: failure },
        message: 'configuration reload refused; keeping the current configuration',
      },
    ]);
    expect(await reloadCounts()).toEqual({ success: 0, error: 1 });
  });

  /** The configuration identity gauges as a scrape shows them, timestamps as numbers. */
  async function identity(): Promise<{ info: string[]; successful: number; lastSuccess: number }> {
    const text = await metrics.registry.metrics();
    const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    return {
      info: text.split('\n').filter((line) => line.startsWith('gengate_config_info{')),
      successful: value('gengate_config_last_reload_successful'),
      lastSuccess: value('gengate_config_last_reload_success_timestamp_seconds'),
    };
  }

  it('reports the applied configuration by its hash, and the failure of the last reload until one succeeds', async () => {
    const reloader = startWatching(NO_FILE_RELOADS);
    const before = Date.now() / 1000;
    await writeFile(path, configWithTenants('team-a', 'team-b'));
    expect(await reloader.reload()).toBe('success');
    const applied = await identity();
    const hash = tenantConfigHash((await loadConfig(path, ENV)).tenants);
    expect(applied.info).toEqual([`gengate_config_info{hash="${hash}"} 1`]);
    expect(applied.successful).toBe(1);
    expect(applied.lastSuccess).toBeGreaterThanOrEqual(Math.floor(before));

    // Refused: the hash and the time of the last success stay; the last reload is marked failed.
    await writeFile(path, INVALID_CONFIG);
    expect(await reloader.reload()).toBe('error');
    expect(await identity()).toEqual({ ...applied, successful: 0 });

    // The next reload that succeeds clears the failure and replaces the hash: one series, never two.
    await writeFile(path, configWithTenants('team-c'));
    expect(await reloader.reload()).toBe('success');
    const next = await identity();
    const nextHash = tenantConfigHash((await loadConfig(path, ENV)).tenants);
    expect(nextHash).not.toBe(hash);
    expect(next.info).toEqual([`gengate_config_info{hash="${nextHash}"} 1`]);
    expect(next.successful).toBe(1);
  });

  it('reloads on SIGHUP and stops listening when closed', async () => {
    const reloader = startWatching(NO_FILE_RELOADS);
    expect(signals.listenerCount('SIGHUP')).toBe(1);
    signals.emit('SIGHUP');
    await waitFor('the SIGHUP reload', () => applied.length === 1);
    expect(tenantIds(applied[0])).toEqual(['team-a']);
    reloader.close();
    expect(signals.listenerCount('SIGHUP')).toBe(0);
  });

  it('listens for SIGHUP on the process by default', () => {
    const before = process.listenerCount('SIGHUP');
    const reloader = startWatching({ signals: undefined });
    expect(process.listenerCount('SIGHUP')).toBe(before + 1);
    reloader.close();
    expect(process.listenerCount('SIGHUP')).toBe(before);
  });

  /** Writes `text` beside the configuration and renames it over it, as an editor or a deploy tool should. */
  async function replaceWhole(text: string): Promise<void> {
    await writeFile(join(folder, 'next.yaml'), text);
    await rename(join(folder, 'next.yaml'), path);
  }

  const IN_PLACE_WARNING =
    'configuration file written in place; not applied: write the new file beside it and rename it over ' +
    'this one (mv), or send SIGHUP once it is written';

  it('reloads when a new file is renamed over it; a write in place is logged and not applied', async () => {
    startWatching();
    await replaceWhole(configWithTenants('team-c'));
    await waitFor('the renamed file', () => tenantIds(applied.at(-1))?.join() === 'team-c');

    await writeFile(path, configWithTenants('team-b'));
    await waitFor('the warning', () => logs.some((entry) => entry.message === IN_PLACE_WARNING));
    expect(logs.find((entry) => entry.message === IN_PLACE_WARNING)).toEqual({
      level: 'warn',
      fields: { path },
      message: IN_PLACE_WARNING,
    });
    expect(applied.map(tenantIds)).toEqual([['team-c']]);
    // SIGHUP applies the file as it now is.
    signals.emit('SIGHUP');
    await waitFor('the reload on SIGHUP', () => tenantIds(applied.at(-1))?.join() === 'team-b');
  });

  it('follows a Kubernetes ConfigMap mount: the ..data symlink swapped to a new folder', async () => {
    // The layout the kubelet makes: gengate.yaml -> ..data/gengate.yaml, ..data -> ..2026_<n>.
    await rm(path);
    await mkdir(join(folder, '..v1'));
    await writeFile(join(folder, '..v1', 'gengate.yaml'), configWithTenants('team-a'));
    await symlink('..v1', join(folder, '..data'));
    await symlink(join('..data', 'gengate.yaml'), path);
    startWatching();
    await mkdir(join(folder, '..v2'));
    await writeFile(join(folder, '..v2', 'gengate.yaml'), configWithTenants('team-e'));
    await symlink('..v2', join(folder, '..data_tmp'));
    await rename(join(folder, '..data_tmp'), join(folder, '..data'));
    await waitFor('the swapped file', () => tenantIds(applied.at(-1))?.join() === 'team-e');
  });

  it('never applies a prefix of a file written slowly in place (finding 9)', async () => {
    startWatching();
    // Every prefix that ends on a line parses: the first lines alone allow video and drop the cap.
    const whole = [
      'upstream: { credentials: { shared: { env: MAXAI_TOKEN } } }',
      'tenants:',
      '  - id: team-a',
      '    credential: shared',
      '    keys: []',
      '    policy:',
      '      video: { enabled: false }',
      '      samples: { maximum: 2, onViolation: reject }',
      '',
    ].join('\n');
    const handle = await open(path, 'w');
    try {
      for (const line of whole.split(/(?<=\n)/)) {
        await handle.write(line);
        // Longer than the debounce and the poll interval: the watcher looks at every prefix.
        await new Promise((resolve) => setTimeout(resolve, 3 * FAST.pollIntervalMs));
      }
    } finally {
      await handle.close();
    }
    await waitFor('the warning', () => logs.some((entry) => entry.message === IN_PLACE_WARNING));
    expect(applied).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('keeps watching after an invalid file and applies the next valid one', async () => {
    startWatching();
    await replaceWhole(INVALID_CONFIG);
    await waitFor('the refused file', () => errors.length > 0);
    await replaceWhole(configWithTenants('team-d'));
    await waitFor('the corrected file', () => tenantIds(applied.at(-1))?.join() === 'team-d');
  });

  it('runs one reload at a time; asks made meanwhile share a single follow-up reload', async () => {
    const pending: ((config: GatewayConfig) => void)[] = [];
    const config = await loadConfig(path, ENV);
    const reloader = startWatching({
      ...NO_FILE_RELOADS,
      load: () => new Promise<GatewayConfig>((resolve) => pending.push(resolve)),
    });
    const first = reloader.reload();
    const second = reloader.reload();
    const third = reloader.reload();
    expect(third).toBe(second);
    expect(pending).toHaveLength(1);
    pending[0]!(config);
    expect(await first).toBe('success');
    await waitFor('the follow-up load', () => pending.length === 2);
    pending[1]!(config);
    expect(await second).toBe('success');
    expect(applied).toHaveLength(2);
  });
});

describe('sectionsNeedingRestart', () => {
  it('names every changed section except tenants, which a reload applies', async () => {
    const parse = (text: string) => parseConfigText(text, { env: {}, baseDir: tmpdir() });
    const running = await parse('server: { port: 8080 }\nstore: { kind: memory }\ntenants: []\n');
    const next = await parse('server: { port: 8081 }\nstore: { kind: memory }\ntenants: []\n');
    expect(sectionsNeedingRestart(running, next)).toEqual(['server']);
    expect(sectionsNeedingRestart(running, running)).toEqual([]);
  });
});

describe('tenantConfigHash', () => {
  it('depends on what the tenants are, not on how the file lays them out', async () => {
    const hashOf = async (text: string) =>
      tenantConfigHash((await parseConfigText(text, { env: ENV, baseDir: tmpdir() })).tenants);
    const tenant = '{ id: team-a, credential: shared, keys: [], policy: { mode: shadow } }';
    const reordered = '{ policy: { mode: shadow }, keys: [], credential: shared, id: team-a }';
    const upstream = 'upstream: { credentials: { shared: { env: MAXAI_TOKEN } } }';
    const base = await hashOf(`${upstream}\ntenants: [${tenant}]\n`);
    expect(base).toMatch(/^[0-9a-f]{16}$/);
    expect(await hashOf(`# a comment\n${upstream}\ntenants:\n  - ${reordered}\n`)).toBe(base);
    // Sections other than tenants are not part of it; a tenant's policy is.
    expect(await hashOf(`${upstream}\nlogging: { level: debug }\ntenants: [${tenant}]\n`)).toBe(base);
    expect(await hashOf(`${upstream}\ntenants: [${tenant.replace('shadow', 'enforce')}]\n`)).not.toBe(base);
  });
});
