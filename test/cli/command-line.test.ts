// The command line never shows a stack trace for a user's mistake (README.md#configuration): every command,
// the gateway's own included, answers --help on stdout and --version with exit 0, and an unknown option,
// an option without its value, an unknown command or a bad environment value gets one line naming it and
// exit 2. Each run is a real process: `node src/cli.ts` or `node src/main.ts` with the project's Node.js
// (the npm scripts run exactly these), and `npm start` itself where npm's part matters.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashTenantKey } from '../../src/auth/keys.ts';
import { gengateVersion } from '../../src/cli/arguments.ts';
import { runCli, runCommand, runMain, type CommandResult } from '../support/run-command.ts';

// Each test starts a few processes; a loaded CI machine takes seconds for each.
const PROCESSES_TIMEOUT_MS = 60_000;
const VERSION_LINE = `gengate ${gengateVersion()}\n`;

// For Array.map: the processes of one test run side by side.
const runCliWith = (args: string[]) => runCli(args);
const runMainWith = (args: string[]) => runMain(args);

/** A mistake's answer: one line on stderr, nothing on stdout, exit 2. */
function mistake(line: string): CommandResult {
  return { code: 2, stdout: '', stderr: `${line}\n` };
}

describe(
  'gengate (the gateway process) reads its arguments without crashing',
  { timeout: PROCESSES_TIMEOUT_MS },
  () => {
    it('npm start -- --help prints the usage on stdout and exits 0', async () => {
      const result = await runCommand('npm', ['run', '--silent', 'start', '--', '--help']);
      expect(result.code).toBe(0);
      expect(result.stderr).toBe('');
      expect(result.stdout).toMatch(/^usage: npm start -- \[--config FILE\]/);
      expect(result.stdout).toContain('-c, --config FILE');
    });

    it('--version prints the version of package.json', async () => {
      expect(await runMain(['--version'])).toEqual({ code: 0, stdout: VERSION_LINE, stderr: '' });
    });

    it('an unknown option, -c or --config without a value: one line, exit 2', async () => {
      const needsValue = mistake('gengate: option --config needs a value (see gengate --help)');
      expect(
        await Promise.all(
          [['--port', '8000'], ['-c'], ['--config'], ['--config', '--demo']].map(runMainWith),
        ),
      ).toEqual([
        mistake('gengate: unknown option --port (see gengate --help)'),
        needsValue,
        needsValue,
        needsValue,
      ]);
    });

    it('without --config, GENGATE_CONFIG or --demo it refuses to start and says how to pass one', async () => {
      expect(await runMain([], { env: { GENGATE_CONFIG: '' } })).toEqual(
        mistake(
          'gengate: no configuration file: pass --config FILE (npm start -- --config FILE) or set GENGATE_CONFIG; `npm start` alone runs the demo (see gengate --help)',
        ),
      );
    });

    it('LOG_LEVEL=verbose and REDIS_URL=notaurl: one line naming the variable, exit 2', async () => {
      const demo = join(process.cwd(), 'config/demo.yaml');
      // `npm start` alone picks the demo's file (and stops at the bad variable, before listening).
      const npmStart = ['run', '--silent', 'start'];
      expect(
        await runCommand('npm', npmStart, { env: { LOG_LEVEL: 'verbose', GENGATE_CONFIG: '' } }),
      ).toEqual({
        code: 2,
        stdout: '',
        stderr:
          `gengate: invalid configuration ${demo} (from --demo): ` +
          'logging.level: must be one of fatal, error, warn, info, debug, trace, silent (from the environment: LOG_LEVEL)\n',
      });
      expect(await runMain(['--config', 'config/demo.yaml'], { env: { REDIS_URL: 'notaurl' } })).toEqual({
        code: 2,
        stdout: '',
        stderr:
          `gengate: invalid configuration ${demo} (from --config): ` +
          'store.redis.url: must be a redis:// or rediss:// URL (from the environment: REDIS_URL)\n',
      });
    });

    it('names the file GENGATE_CONFIG pointed at when it cannot be read', async () => {
      const absent = join(tmpdir(), 'gengate-absent', 'gengate.yaml');
      expect(await runMain([], { env: { GENGATE_CONFIG: absent } })).toEqual({
        code: 2,
        stdout: '',
        stderr:
          `gengate: invalid configuration ${absent} (from GENGATE_CONFIG): ` +
          `${absent}: cannot read the configuration file: no such file\n`,
      });
    });
  },
);

describe('npm run gengate -- <command>', { timeout: PROCESSES_TIMEOUT_MS }, () => {
  it('--help, with or without a command, prints on stdout and exits 0', async () => {
    const asked = [['--help'], ['check-config', '--help'], ['new-key', '--help'], ['simulator', '-h']];
    const results = await Promise.all(asked.map(runCliWith));
    for (const [index, result] of results.entries()) {
      const args = asked[index];
      expect({ args, code: result.code, stderr: result.stderr }).toEqual({ args, code: 0, stderr: '' });
      expect(result.stdout).toMatch(/^usage: npm run gengate -- /);
    }
  });

  it('--version, with or without a command', async () => {
    const asked = [['--version'], ['check-config', '--version'], ['new-key', '--version']];
    const version = { code: 0, stdout: VERSION_LINE, stderr: '' };
    expect(await Promise.all(asked.map(runCliWith))).toEqual([version, version, version]);
  });

  it('an unknown command says so, exit 2', async () => {
    expect(await runCli(['bogus'])).toEqual(
      mistake(
        'gengate: unknown command "bogus" (commands: check-config, new-key, simulator) (see gengate --help)',
      ),
    );
  });

  it('an unknown option, a missing value or a stray argument: one line, exit 2', async () => {
    const asked = [
      ['check-config', '--bogus'],
      ['check-config', '--config'],
      ['new-key', '--tenant', 'a', 'extra'],
      ['simulator', '--port', 'http'],
    ];
    expect(await Promise.all(asked.map(runCliWith))).toEqual([
      mistake('gengate check-config: unknown option --bogus (see gengate check-config --help)'),
      mistake('gengate check-config: option --config needs a value (see gengate check-config --help)'),
      mistake('gengate new-key: unexpected argument extra (see gengate new-key --help)'),
      mistake('gengate simulator: --port must be a non-negative integer (see gengate simulator --help)'),
    ]);
  });

  // Regression: node:net's RangeError [ERR_SOCKET_BAD_PORT] stack, exit 1.
  it('simulator --port past 65535: one line, exit 2', async () => {
    const pastTheLast = mistake(
      'gengate simulator: --port must be at most 65535 (see gengate simulator --help)',
    );
    expect(
      await Promise.all(
        [
          ['simulator', '--port', '65536'],
          ['simulator', '--port', '70000'],
        ].map(runCliWith),
      ),
    ).toEqual([pastTheLast, pastTheLast]);
  });

  // Regression: the lookup's getaddrinfo ENOTFOUND stack, exit 1. Without a resolver the lookup fails
  // with EAI_AGAIN instead; the line is the same but for the code.
  it('simulator --host that is neither an address nor a name that resolves: one line naming it, exit 2', async () => {
    // One short try of the resolver, wherever no DNS server answers (glibc reads RES_OPTIONS).
    const result = await runCli(['simulator', '--host', '999.1.1.1', '--port', '0'], {
      env: { RES_OPTIONS: 'timeout:1 attempts:1' },
    });
    expect(result).toEqual({
      code: 2,
      stdout: '',
      stderr: expect.stringMatching(
        /^gengate simulator: --host 999\.1\.1\.1: not an IP address, nor a name that resolves \((ENOTFOUND|EAI_AGAIN)\) \(see gengate simulator --help\)\n$/,
      ) as string,
    });
  });
});

describe('key expiry', { timeout: PROCESSES_TIMEOUT_MS }, () => {
  it('new-key refuses an expiry in the past, exit 2', async () => {
    expect(await runCli(['new-key', '--tenant', 'team-a', '--expires-at', '2020-01-01T00:00:00Z'])).toEqual(
      mistake(
        'gengate new-key: --expires-at 2020-01-01T00:00:00.000Z is in the past: the key could never be used (see gengate new-key --help)',
      ),
    );
  });

  it('new-key warns about an expiry within 14 days, and still prints the key', async () => {
    const soon = new Date(Date.now() + 3 * 86_400_000 - 60_000).toISOString();
    const result = await runCli(['new-key', '--tenant', 'team-a', '--expires-at', soon]);
    expect(result.code).toBe(0);
    const prefix = /"(ggk_[A-Za-z0-9]{4})"/.exec(result.stdout)?.[1] ?? '';
    expect(result.stderr).toBe(`warning: key ${prefix} of tenant "team-a" expires at ${soon}, in 3 days\n`);
  });
});

describe('check-config', { timeout: PROCESSES_TIMEOUT_MS }, () => {
  let folder: string;
  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'gengate-check-'));
  });
  afterAll(async () => {
    await rm(folder, { recursive: true, force: true });
  });

  const hash = (n: number) => hashTenantKey(`ggk_${String(n).repeat(32)}`);
  const tenantsWith = (keys: string) =>
    [
      'upstream: { credentials: { shared: { env: SHARED_TOKEN } } }',
      'tenants:',
      `  - { id: team-a, credential: shared, keys: [${keys}] }`,
      '',
    ].join('\n');

  it('warns about a key already expired and one expiring within 14 days: exit 0, or 2 with --strict', async () => {
    const soon = new Date(Date.now() + 5 * 86_400_000 - 60_000).toISOString();
    const path = join(folder, 'expiring.yaml');
    await writeFile(
      path,
      tenantsWith(
        `{ sha256: "${hash(1)}", prefix: ggk_1111, expiresAt: 2020-01-01T00:00:00Z }, ` +
          `{ sha256: "${hash(2)}", prefix: ggk_2222, expiresAt: "${soon}" }, ` +
          `{ sha256: "${hash(3)}", prefix: ggk_3333, expiresAt: 2999-01-01T00:00:00Z }`,
      ),
    );
    const warnings =
      'warning: tenants[0].keys[0].expiresAt: key ggk_1111 of tenant "team-a" expired at 2020-01-01T00:00:00.000Z\n' +
      `warning: tenants[0].keys[1].expiresAt: key ggk_2222 of tenant "team-a" expires at ${soon}, in 5 days\n`;
    const env = { SHARED_TOKEN: 'token' };
    expect(await runCli(['check-config', '--config', path], { env })).toEqual({
      code: 0,
      stdout: 'config OK: 1 tenant, 2 warnings\n',
      stderr: warnings,
    });
    expect(await runCli(['check-config', '--config', path, '--strict'], { env })).toEqual({
      code: 2,
      stdout: '',
      stderr: `${path}: 2 warnings, refused by --strict\n${warnings}`,
    });
  });

  it('lists a duplicate tenant id in the same pass as a limit of 0 in that tenant', async () => {
    const path = join(folder, 'one-pass.yaml');
    await writeFile(
      path,
      [
        'upstream: { credentials: { shared: { env: SHARED_TOKEN } } }',
        'tenants:',
        '  - { id: team-a, credential: shared, keys: [] }',
        '  - id: team-a',
        '    credential: shared',
        '    keys: []',
        '    limits: [{ id: images, routes: ["*"], cost: requests, limit: 0, windowSeconds: 60 }]',
        '',
      ].join('\n'),
    );
    expect(await runCli(['check-config', '--config', path], { env: { SHARED_TOKEN: 'token' } })).toEqual({
      code: 2,
      stdout: '',
      stderr:
        `${path}: invalid configuration\n` +
        'tenants[1].limits[0].limit: must be at least 1\n' +
        'tenants[1].id: tenant id "team-a" is already used by tenants[0]\n',
    });
  });

  it('--against the running file lists what a reload would refuse, and the sections that need a restart', async () => {
    const running = join(folder, 'running.yaml');
    await writeFile(running, tenantsWith(''));
    const next = join(folder, 'next.yaml');
    await writeFile(
      next,
      [
        'server: { port: 8081 }',
        'upstream: { credentials: { shared: { env: SHARED_TOKEN }, research: { env: RESEARCH_TOKEN } } }',
        'tenants:',
        '  - { id: team-a, credential: shared, keys: [] }',
        '  - { id: team-b, credential: research, keys: [] }',
        '',
      ].join('\n'),
    );
    const env = { SHARED_TOKEN: 'token', RESEARCH_TOKEN: 'token' };
    // On its own the file is valid: a fresh start takes it.
    expect(await runCli(['check-config', '--config', next], { env })).toEqual({
      code: 0,
      stdout: 'config OK: 2 tenants\n',
      stderr: '',
    });
    expect(await runCli(['check-config', '--config', next, '--against', running], { env })).toEqual({
      code: 2,
      stdout: '',
      stderr:
        `${next}: invalid configuration\n` +
        'tenants[1].credential: credential "research" is new: a reload refuses it, upstream credentials change only on restart\n' +
        'warning: upstream: changed: applies only on restart, a reload keeps the running value\n' +
        'warning: server: changed: applies only on restart, a reload keeps the running value\n',
    });
  });

  it('reads a relative --config from the folder npm was started in', async () => {
    await writeFile(join(folder, 'here.yaml'), tenantsWith(''));
    expect(
      await runCommand(
        'npm',
        [
          '--prefix',
          process.cwd(),
          'run',
          '--silent',
          'gengate',
          '--',
          'check-config',
          '--config',
          'here.yaml',
        ],
        { cwd: folder, env: { SHARED_TOKEN: 'token' } },
      ),
    ).toEqual({ code: 0, stdout: 'config OK: 1 tenant\n', stderr: '' });
  });
});
