// Which configuration file the gateway runs (docs/decisions/0041-demo-chosen-by-the-npm-script.md):
// --config, then GENGATE_CONFIG, then --demo's file; a relative path is read from the folder the
// operator typed it in, which npm gives as INIT_CWD. The refusals are pinned through the real process in
// command-line.test.ts; these are the choices that start a gateway, so they are judged in-process.
import { join, resolve } from 'node:path';
import { describe, expect, test } from 'vitest';
import { readStartOptions } from '../../src/cli/start-options.ts';
import { keyExpiryWarnings } from '../../src/config/key-expiry.ts';

const DEMO = resolve('config/demo.yaml');

describe('readStartOptions', () => {
  test('--config (or -c) wins over GENGATE_CONFIG, which wins over --demo', () => {
    const env = { GENGATE_CONFIG: '/etc/gengate/from-env.yaml' };
    expect(readStartOptions(['--demo', '--config', '/srv/a.yaml'], env)).toEqual({
      configPath: '/srv/a.yaml',
      configFrom: '--config',
    });
    expect(readStartOptions(['-c', '/srv/b.yaml'], env)).toEqual({
      configPath: '/srv/b.yaml',
      configFrom: '--config',
    });
    expect(readStartOptions(['--demo'], env)).toEqual({
      configPath: '/etc/gengate/from-env.yaml',
      configFrom: 'GENGATE_CONFIG',
    });
    expect(readStartOptions(['--demo'], { GENGATE_CONFIG: '' })).toEqual({
      configPath: DEMO,
      configFrom: '--demo',
    });
  });

  test('a relative path is read from the working folder, or from the folder npm was started in', () => {
    expect(readStartOptions(['--config', 'mine.yaml'], {})).toEqual({
      configPath: resolve('mine.yaml'),
      configFrom: '--config',
    });
    const npm = { npm_lifecycle_event: 'start', INIT_CWD: '/home/operator/site' };
    expect(readStartOptions(['--demo', '--config', 'mine.yaml'], npm)).toEqual({
      configPath: join('/home/operator/site', 'mine.yaml'),
      configFrom: '--config',
    });
    // INIT_CWD left in the environment by an npm that did not start this process means nothing.
    expect(readStartOptions(['--config', 'mine.yaml'], { INIT_CWD: '/elsewhere' })).toEqual({
      configPath: resolve('mine.yaml'),
      configFrom: '--config',
    });
  });
});

describe('keyExpiryWarnings', () => {
  const now = Date.parse('2027-06-01T00:00:00Z');
  const tenant = (expiresAt: string | undefined) => ({
    id: 'team-a',
    keys: [{ prefix: 'ggk_Ab3d', ...(expiresAt === undefined ? {} : { expiresAt }) }],
  });

  test('an expired key, and one within 14 days (counted in whole days, rounded up)', () => {
    expect(keyExpiryWarnings([tenant('2027-06-01T00:00:00.000Z')], now)).toEqual([
      {
        path: 'tenants[0].keys[0].expiresAt',
        message: 'key ggk_Ab3d of tenant "team-a" expired at 2027-06-01T00:00:00.000Z',
      },
    ]);
    expect(keyExpiryWarnings([tenant('2027-06-15T00:00:00.000Z')], now)).toEqual([
      {
        path: 'tenants[0].keys[0].expiresAt',
        message: 'key ggk_Ab3d of tenant "team-a" expires at 2027-06-15T00:00:00.000Z, in 14 days',
      },
    ]);
    expect(keyExpiryWarnings([tenant('2027-06-01T00:00:01.000Z')], now)[0]?.message).toMatch(/in 1 day$/);
  });

  test('nothing for a key without expiry or past the 14 days', () => {
    expect(keyExpiryWarnings([tenant(undefined), tenant('2027-06-15T00:00:00.001Z')], now)).toEqual([]);
  });
});
