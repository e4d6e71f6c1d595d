// check-config warns about webhook destinations that can never be reached (docs/webhooks.md, "Security"):
// list entries no address they cover can pass, and URLs every attempt would refuse whatever their name
// resolves to (a never-allowed address in any spelling, loopback or private without a listed CIDR, plain
// http not in allowHttp, a name no glob matches when no CIDR is listed). Warnings: exit 0, or 2 with
// --strict; a URL's credentials are never quoted. Each run is the real command in a process of its own.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runMain } from '../support/run-command.ts';

// Each test starts a few processes; a loaded CI machine takes seconds for each.
const PROCESSES_TIMEOUT_MS = 60_000;
const ENV = { SHARED_TOKEN: 'token', HOOK_SECRET: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' };

function configWith(webhooks: string, urls: Record<string, string>): string {
  return [
    'upstream: { credentials: { shared: { env: SHARED_TOKEN } } }',
    `webhooks: ${webhooks}`,
    'tenants:',
    '  - id: team-a',
    '    credential: shared',
    '    keys: []',
    '    webhooks:',
    ...Object.entries(urls).map(
      ([id, url]) =>
        `      - { id: ${id}, url: "${url}", secret: { env: HOOK_SECRET }, events: [job.completed] }`,
    ),
    '',
  ].join('\n');
}

const refusedAtEveryAttempt = (index: number, id: string, why: string) =>
  `warning: tenants[0].webhooks[${index}].url: webhook "${id}" of tenant "team-a" will be refused at every attempt: ${why}\n`;
const NEVER =
  'is a link-local, cloud metadata, unspecified, broadcast or multicast address, never a webhook destination';
const NO_EFFECT =
  'has no effect: link-local, cloud metadata, unspecified, broadcast and multicast addresses are never webhook destinations';

describe('check-config and webhook destinations', { timeout: PROCESSES_TIMEOUT_MS }, () => {
  let folder: string;
  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'gengate-check-webhooks-'));
  });
  afterAll(async () => {
    await rm(folder, { recursive: true, force: true });
  });

  async function check(name: string, text: string, strict = false) {
    const path = join(folder, name);
    await writeFile(path, text);
    return {
      path,
      result: await runCli(['check-config', '--config', path, ...(strict ? ['--strict'] : [])], { env: ENV }),
    };
  }

  it('warns about never-allowed list entries and URLs at refused addresses: exit 0, or 2 with --strict', async () => {
    const text = configWith(
      '{ allowedDestinations: ["*.svc.cluster.local", "10.0.0.0/8", "172.16.0.0/12", "169.254.0.0/16", "fd00:ec2::254", "::ffff:10.0.0.0/104", "224.0.0.0/4"], allowHttp: ["fe80::/10", "*.svc.cluster.local"] }',
      {
        fine: 'https://hooks.team-a.svc.cluster.local/gengate',
        plainlisted: 'http://hooks.team-a.svc.cluster.local/gengate',
        metadata: 'https://169.254.169.254/latest/meta-data/',
        decimal: 'https://2852039166/',
        mapped: 'https://[::ffff:169.254.169.254]/',
        awsv6: 'https://[fd00:ec2::254]/',
        unspecified: 'https://0.0.0.0:8443/',
        multicast: 'https://224.0.0.1/',
        loopback: 'https://127.0.0.1:8443/hook',
        localhost: 'https://localhost:8443/hook',
        plain: 'http://10.1.2.3/hook',
        secretive: 'https://receiver:hunter2@[fe80::1]/hook',
        resolved: 'https://hooks.example.com/gengate',
      },
    );
    const warnings = [
      `warning: webhooks.allowedDestinations[3]: "169.254.0.0/16" ${NO_EFFECT}\n`,
      `warning: webhooks.allowedDestinations[4]: "fd00:ec2::254" ${NO_EFFECT}\n`,
      'warning: webhooks.allowedDestinations[5]: "::ffff:10.0.0.0/104" has no effect: addresses are judged in their IPv4 form, so list the IPv4 range\n',
      `warning: webhooks.allowedDestinations[6]: "224.0.0.0/4" ${NO_EFFECT}\n`,
      `warning: webhooks.allowHttp[0]: "fe80::/10" ${NO_EFFECT}\n`,
      refusedAtEveryAttempt(2, 'metadata', `169.254.169.254 ${NEVER}`),
      refusedAtEveryAttempt(3, 'decimal', `169.254.169.254 ${NEVER}`),
      refusedAtEveryAttempt(4, 'mapped', `[::ffff:a9fe:a9fe] ${NEVER}`),
      refusedAtEveryAttempt(5, 'awsv6', `[fd00:ec2::254] ${NEVER}`),
      refusedAtEveryAttempt(6, 'unspecified', `0.0.0.0 ${NEVER}`),
      refusedAtEveryAttempt(7, 'multicast', `224.0.0.1 ${NEVER}`),
      refusedAtEveryAttempt(
        8,
        'loopback',
        '127.0.0.1 is a loopback or private address, allowed only through a CIDR listed in webhooks.allowedDestinations',
      ),
      refusedAtEveryAttempt(
        9,
        'localhost',
        'localhost (loopback) is a loopback or private address, allowed only through a CIDR listed in webhooks.allowedDestinations',
      ),
      refusedAtEveryAttempt(
        10,
        'plain',
        'plain http to 10.1.2.3, which webhooks.allowHttp does not list (https is required)',
      ),
      refusedAtEveryAttempt(11, 'secretive', `[fe80::1] ${NEVER}`),
    ].join('');
    const { path, result } = await check('refused.yaml', text);
    expect(result).toEqual({ code: 0, stdout: 'config OK: 1 tenant, 15 warnings\n', stderr: warnings });
    expect((await check('refused.yaml', text, true)).result).toEqual({
      code: 2,
      stdout: '',
      stderr: `${path}: 15 warnings, refused by --strict\n${warnings}`,
    });
    expect(result.stderr).not.toContain('hunter2');
  });

  it('with no CIDR listed, a name no glob matches and plain http to a name allowHttp lacks are refused', async () => {
    const { result } = await check(
      'names.yaml',
      configWith(
        '{ allowedDestinations: ["*.svc.cluster.local", "hooks.example.com"], allowHttp: ["plain.svc.cluster.local"] }',
        {
          unlisted: 'https://hooks.example.org/gengate',
          https: 'https://hooks.team-a.svc.cluster.local/',
          plain: 'http://hooks.team-a.svc.cluster.local/',
          plainlisted: 'http://plain.svc.cluster.local/',
          named: 'https://HOOKS.example.com./gengate',
        },
      ),
    );
    expect(result).toEqual({
      code: 0,
      stdout: 'config OK: 1 tenant, 2 warnings\n',
      stderr:
        refusedAtEveryAttempt(
          0,
          'unlisted',
          'hooks.example.org matches no host in webhooks.allowedDestinations, which lists no CIDR',
        ) +
        refusedAtEveryAttempt(
          2,
          'plain',
          'plain http to hooks.team-a.svc.cluster.local, which webhooks.allowHttp does not list (https is required)',
        ),
    });
  });

  it('says nothing of destinations an attempt may reach', async () => {
    const { result } = await check(
      'fine.yaml',
      configWith(
        '{ allowedDestinations: ["*.svc.cluster.local", "127.0.0.0/8", "::1", "0.0.0.0/0", "::/0"], allowHttp: ["127.0.0.1", "::1"] }',
        {
          named: 'https://hooks.team-a.svc.cluster.local/gengate',
          loopback: 'http://127.0.0.1:8080/hook',
          loopbackv6: 'http://[::1]:8080/hook',
          localhost: 'https://localhost:8443/hook',
          anywhere: 'https://hooks.example.com/gengate',
        },
      ),
    );
    expect(result).toEqual({ code: 0, stdout: 'config OK: 1 tenant\n', stderr: '' });
  });
});

// Regression: check-config said "config OK" for webhook secrets the gateway then refused at start (exit 2).
// Both judge them by one reading (src/config/webhook-secret-values.ts).
describe('check-config and webhook secrets', { timeout: PROCESSES_TIMEOUT_MS }, () => {
  let folder: string;
  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'gengate-check-webhook-secrets-'));
  });
  afterAll(async () => {
    await rm(folder, { recursive: true, force: true });
  });

  it('lists an unset variable, a missing file and a value that is no whsec_ secret, as the gateway does at start; --skip-credentials leaves them out', async () => {
    const missing = join(folder, 'missing-secret');
    await writeFile(join(folder, 'relative-secret'), `${ENV.HOOK_SECRET}\n`);
    await writeFile(join(folder, 'plain-secret'), 'not-a-webhook-secret\n');
    // Base64 of a length no encoder writes: the signing library throws on it (a stack trace, exit 1).
    await writeFile(join(folder, 'badly-padded-secret'), 'whsec_abc\n');
    const hook = (id: string, secret: string) =>
      `      - { id: ${id}, url: "https://hooks.team-a.svc.cluster.local/", secret: ${secret}, events: [job.completed] }`;
    const path = join(folder, 'secrets.yaml');
    await writeFile(
      path,
      [
        'upstream: { credentials: { shared: { env: SHARED_TOKEN } } }',
        'store: { kind: memory }',
        'webhooks: { allowedDestinations: ["*.svc.cluster.local"] }',
        'tenants:',
        '  - id: team-a',
        '    credential: shared',
        '    keys: []',
        '    webhooks:',
        hook('unset', '{ env: UNSET_HOOK_SECRET }'),
        hook('missing', `{ file: "${missing}" }`),
        hook('relative', '{ file: relative-secret }'),
        hook('plain', '{ file: plain-secret }'),
        hook('padding', '{ file: badly-padded-secret }'),
        hook('fine', '{ env: HOOK_SECRET }'),
        '',
      ].join('\n'),
    );
    const problems = [
      'tenants[0].webhooks[0].secret: environment variable UNSET_HOOK_SECRET is not set',
      'tenants[0].webhooks[1].secret: cannot read the file (ENOENT)',
      'tenants[0].webhooks[3].secret: not a whsec_<base64> secret',
      'tenants[0].webhooks[4].secret: not a whsec_<base64> secret',
    ];
    expect(await runCli(['check-config', '--config', path], { env: ENV })).toEqual({
      code: 2,
      stdout: '',
      stderr: [`${path}: invalid configuration`, ...problems, ''].join('\n'),
    });
    expect(await runCli(['check-config', '--config', path, '--skip-credentials'], { env: ENV })).toEqual({
      code: 0,
      stdout: 'config OK: 1 tenant\n',
      stderr: '',
    });
    // The gateway stops on the same list, before it opens anything.
    expect(await runMain(['--config', path], { env: ENV })).toEqual({
      code: 2,
      stdout: '',
      stderr: [
        `gengate: invalid configuration ${path} (from --config)`,
        ...problems.map((line) => `  ${line}`),
        '',
      ].join('\n'),
    });
  });
});
