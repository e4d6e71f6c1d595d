// The configuration commands, check-config and new-key, run as an operator runs them: `npm run gengate -- ...` in a child process.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashTenantKey } from '../../src/auth/keys.ts';
import { parseConfigText } from '../../src/config/load.ts';
import { runGengate, type CommandResult } from '../support/run-command.ts';

// Each test starts one or two npm processes; a loaded CI machine takes seconds for each.
const PROCESSES_TIMEOUT_MS = 60_000;

/** What check-config answers for a file it refuses: exit code 2, the file's name, one problem a line. */
function refusedConfig(path: string, problems: string[]): CommandResult {
  return { code: 2, stdout: '', stderr: [`${path}: invalid configuration`, ...problems, ''].join('\n') };
}

describe('gengate check-config', { timeout: PROCESSES_TIMEOUT_MS }, () => {
  let folder: string;
  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'gengate-cli-'));
  });
  afterAll(async () => {
    await rm(folder, { recursive: true, force: true });
  });

  it('accepts the demo configuration with exit code 0', async () => {
    expect(await runGengate(['check-config', '--config', 'config/demo.yaml'])).toEqual({
      code: 0,
      stdout: 'config OK: 2 tenants\n',
      stderr: '',
    });
  });

  it('lists every problem, one per line, with exit code 2', async () => {
    const path = join(folder, 'invalid.yaml');
    await writeFile(
      path,
      'server: { port: -1, colour: blue }\nlogging: { level: loud }\ntenants:\n  - { id: a, credential: none, keys: [] }\n',
    );
    expect(await runGengate(['check-config', '--config', path])).toEqual(
      refusedConfig(path, [
        'server: unknown key "colour"',
        'server.port: must be at least 0',
        'logging.level: must be one of fatal, error, warn, info, debug, trace, silent',
        'tenants[0].credential: unknown credential "none" (upstream.credentials: none is configured)',
      ]),
    );
  });

  // Regression: a file with problems printed them alone, so an expired key went unmentioned until the
  // file was otherwise fixed.
  it('warns of an expired key beside the problems of a file that has some', async () => {
    const path = join(folder, 'expired-and-invalid.yaml');
    await writeFile(
      path,
      [
        'colour: blue',
        'upstream: { credentials: { shared: { env: SHARED } } }',
        'tenants:',
        '  - id: a',
        '    credential: shared',
        `    keys: [{ sha256: "${'a'.repeat(64)}", prefix: ggk_Abcd, expiresAt: "2020-01-01T00:00:00Z" }]`,
        '',
      ].join('\n'),
    );
    expect(await runGengate(['check-config', '--config', path], { env: { SHARED: 'token' } })).toEqual(
      refusedConfig(path, [
        '(root): unknown key "colour"',
        'warning: tenants[0].keys[0].expiresAt: key ggk_Abcd of tenant "a" expired at 2020-01-01T00:00:00Z',
      ]),
    );
  });

  // Variables no test environment sets.
  const UNSET_PREFIX = 'GENGATE_TEST_UNSET_PREFIX';
  const UNSET_TOKEN = 'GENGATE_TEST_UNSET_TOKEN';
  const credentialsOfPipeline = [
    'upstream:',
    '  credentials:',
    `    research: { env: ${UNSET_TOKEN} }`,
    '    shared: { file: secrets/shared.token }',
  ];

  it('lists shape, reference, variable and credential problems together in one run', async () => {
    const path = join(folder, 'four-kinds.yaml');
    await writeFile(
      path,
      [
        'server: { port: eighty }',
        `store: { kind: memory, redis: { keyPrefix: "\${${UNSET_PREFIX}}" } }`,
        ...credentialsOfPipeline,
        'tenants:',
        '  - { id: team-a, credential: shared, keys: [] }',
        '  - { id: team-b, credential: archive, keys: [] }',
        '',
      ].join('\n'),
    );
    expect(await runGengate(['check-config', '--config', path])).toEqual(
      refusedConfig(path, [
        `store.redis.keyPrefix: environment variable ${UNSET_PREFIX} is not set`,
        'server.port: must be an integer',
        'tenants[1].credential: unknown credential "archive" (upstream.credentials: configured: research, shared)',
        `upstream.credentials.research.env: environment variable ${UNSET_TOKEN} is not set`,
        `upstream.credentials.shared.file: ${join(folder, 'secrets/shared.token')}: cannot read the file (ENOENT)`,
      ]),
    );
  });

  it('--skip-credentials passes a file whose only problems are its absent credentials', async () => {
    const path = join(folder, 'rendered.yaml');
    await writeFile(
      path,
      [...credentialsOfPipeline, 'tenants:', '  - { id: team-a, credential: shared, keys: [] }', ''].join(
        '\n',
      ),
    );
    expect(await runGengate(['check-config', '--config', path, '--skip-credentials'])).toEqual({
      code: 0,
      stdout: 'config OK: 1 tenant\n',
      stderr: '',
    });
    expect(await runGengate(['check-config', '--config', path])).toEqual(
      refusedConfig(path, [
        `upstream.credentials.research.env: environment variable ${UNSET_TOKEN} is not set`,
        `upstream.credentials.shared.file: ${join(folder, 'secrets/shared.token')}: cannot read the file (ENOENT)`,
      ]),
    );
  });

  it('refuses an empty document with exit code 2', async () => {
    const path = join(folder, 'empty.yaml');
    await writeFile(path, '# rendered from an empty values file\n');
    expect(await runGengate(['check-config', '--config', path])).toEqual(
      refusedConfig(path, ['(root): the configuration is empty']),
    );
  });

  it('reports a missing file and a YAML syntax error with exit code 2', async () => {
    const absent = join(folder, 'absent.yaml');
    expect(await runGengate(['check-config', '--config', absent])).toEqual(
      refusedConfig(absent, [`${absent}: cannot read the configuration file: no such file`]),
    );
    const broken = join(folder, 'broken.yaml');
    await writeFile(broken, 'server: { port: 8080\n');
    expect(await runGengate(['check-config', '--config', broken])).toEqual(
      refusedConfig(broken, [
        'line 2, column 1: Flow map in block collection must be sufficiently indented and end with a }',
      ]),
    );
  });

  it('requires --config', async () => {
    expect(await runGengate(['check-config'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'gengate check-config: missing --config FILE (see gengate check-config --help)\n',
    });
  });
});

describe('gengate new-key', { timeout: PROCESSES_TIMEOUT_MS }, () => {
  it('prints a fresh key once and a config entry that loads and matches it', async () => {
    const result = await runGengate([
      'new-key',
      '--tenant',
      'team-a',
      '--label',
      'ci bot',
      '--expires-at',
      '2027-06-30T02:00:00+02:00',
    ]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    const key = /^ {2}(ggk_[A-Za-z0-9]{40})$/m.exec(result.stdout)?.[1];
    expect(key).toBeDefined();
    const sha256 = hashTenantKey(key!);
    const prefix = key!.slice(0, 8);
    const entry = `      - { sha256: "${sha256}", prefix: "${prefix}", label: "ci bot", expiresAt: "2027-06-30T00:00:00.000Z" }`;
    expect(result.stdout).toBe(
      [
        'New key for tenant "team-a". It is shown only this once; gengate keeps only its hash:',
        '',
        `  ${key!}`,
        '',
        'Add this entry to the keys of tenant "team-a" in the configuration:',
        '',
        entry,
        '',
      ].join('\n'),
    );

    const config = await parseConfigText(
      `upstream: { credentials: { shared: { env: T } } }\ntenants:\n  - id: team-a\n    credential: shared\n    keys:\n${entry}\n`,
      { env: { T: 'token' }, baseDir: '.' },
    );
    expect(config.tenants[0]?.keys).toEqual([
      { sha256, prefix, label: 'ci bot', expiresAt: '2027-06-30T00:00:00.000Z' },
    ]);
  });

  // Regression: a `${` in the label was printed as is, and the pasted entry then named a variable.
  it.each(['cost ${CENTER} "quoted"', 'a ${b', '${a${b}', 'already $${x}'])(
    'prints an entry that loads with the label %s as given',
    async (label) => {
      const result = await runGengate(['new-key', '--tenant', 'team-a', '--label', label]);
      expect(result.code).toBe(0);
      const entry = /^ {6}- \{.*\}$/m.exec(result.stdout)?.[0];
      expect(entry).toBeDefined();
      const config = await parseConfigText(
        `upstream: { credentials: { shared: { env: T } } }\ntenants:\n  - id: team-a\n    credential: shared\n    keys:\n${entry!}\n`,
        { env: { T: 'token' }, baseDir: '.' },
      );
      expect(config.tenants[0]?.keys[0]?.label).toBe(label);
    },
  );

  it('refuses an invalid tenant id with exit code 2', async () => {
    expect(await runGengate(['new-key', '--tenant', 'Team_A'])).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'gengate new-key: invalid tenant id "Team_A": must be 1 to 63 lowercase letters, digits or "-", starting with a letter or digit (see gengate new-key --help)\n',
    });
  });
});
