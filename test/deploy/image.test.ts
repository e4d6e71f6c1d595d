// The container image (contract section 11): the real Dockerfile built with podman on a local stand-in
// for its base image (no registry can be pulled from here), inspected, and run the way the Helm chart
// runs it: another non-root uid, a read-only root filesystem, no capabilities, no new privileges, a
// tmpfs for /tmp, the configuration mounted at its fixed path.
import { execFile } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { rootCertificates } from 'node:tls';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateTenantKey } from '../../src/auth/keys.ts';
import { freePort } from '../support/free-port.ts';
import { waitFor } from '../support/wait-for.ts';
import { privatePodman, type Podman } from './support/podman.ts';
import { baseImageOf, ensureStandInBase } from './support/stand-in-base.ts';

const execFileAsync = promisify(execFile);

const REPO_ROOT = resolve(import.meta.dirname, '../..');
const IMAGE = 'localhost/gengate:test';
const BUILD_STAGE_IMAGE = 'localhost/gengate-build-stage:test';
const CONFIG_PATH = '/etc/gengate/gengate.yaml';
// Another uid than the image's own (1000), as a cluster that assigns uids would run it.
const CHART_UID = '10001:10001';
const RUN_AS_THE_CHART = [
  `--user=${CHART_UID}`,
  '--read-only',
  '--cap-drop=ALL',
  '--security-opt=no-new-privileges',
  '--tmpfs=/tmp',
];
const MEGABYTE = 1_000_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const dockerfile = await readFile(join(REPO_ROOT, 'Dockerfile'), 'utf8');
const packageJson = JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as {
  version: string;
  devDependencies: Record<string, string>;
};
const packageLock = JSON.parse(await readFile(join(REPO_ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { dev?: boolean }>;
};
const base = baseImageOf(dockerfile);
const revision = (await git('rev-parse', 'HEAD')).trim();

interface BuildSecret {
  id: string;
  path: string;
  /** Text that would show that the secret's content reached a layer or the log. */
  needles: string[];
}

/**
 * The npm configuration and registry CA this machine's npm uses, passed to the build as the Dockerfile's
 * `npmrc` and `npm_ca` secrets. The CA's needles are lines of the certificates Node.js does not bundle
 * (the ones the build needs the secret for; a bundled root is in the node binary of every image anyway).
 */
async function npmBuildSecrets(): Promise<BuildSecret[]> {
  const secrets: BuildSecret[] = [];
  const cafile = await npmConfig('cafile');
  if (cafile !== 'null') {
    const bundled = new Set(rootCertificates.map(derBase64));
    const certificates = (await readFile(cafile, 'utf8')).match(PEM_CERTIFICATE) ?? [];
    const needles = certificates.filter((pem) => !bundled.has(derBase64(pem))).map(middleLineOf);
    secrets.push({ id: 'npm_ca', path: cafile, needles });
  }
  const userconfig = await npmConfig('userconfig');
  const npmrc = await readFile(userconfig, 'utf8').catch(() => undefined);
  if (npmrc !== undefined && npmrc.trim() !== '')
    secrets.push({ id: 'npmrc', path: userconfig, needles: [npmrc.trim()] });
  return secrets;
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;

/** A certificate's identity whatever its PEM line width (Node.js wraps at 72, Debian's bundle at 64). */
function derBase64(pem: string): string {
  return pem.replace(/-----[A-Z ]+-----|\s/g, '');
}

/** A base64 line from inside the certificate as the file has it: unique to it, unlike its first lines. */
function middleLineOf(pem: string): string {
  const lines = pem.split('\n');
  return lines[Math.floor(lines.length / 2)]!;
}

async function npmConfig(key: string): Promise<string> {
  return (await execFileAsync('npm', ['config', 'get', key])).stdout.trim();
}

async function git(...args: string[]): Promise<string> {
  return (await execFileAsync('git', args, { cwd: REPO_ROOT })).stdout;
}

const buildSecrets = await npmBuildSecrets();
const secretArgs = buildSecrets.flatMap(({ id, path }) => ['--secret', `id=${id},src=${path}`]);
// What a pipeline passes; the image built here comes from this checkout.
const buildArgs = [`--build-arg=REVISION=${revision}`, `--build-arg=SOURCE_URL=file://${REPO_ROOT}`];

let podman: Podman;
let scratch: string;
let buildLog: string;

function report(line: string): void {
  process.stdout.write(`image.test: ${line}\n`);
}

beforeAll(async () => {
  podman = await privatePodman();
  scratch = await mkdtemp(join(tmpdir(), 'gengate-image-'));
  const standIn = await ensureStandInBase(podman, base);
  report(`stand-in ${base.name} ${standIn.built ? 'built' : 'reused'} in ${standIn.seconds.toFixed(1)} s`);
  const build = (target: string[], tag: string) =>
    podman.run([
      'build',
      '--pull=never',
      '--network=host',
      ...secretArgs,
      ...buildArgs,
      ...target,
      '--tag',
      tag,
      REPO_ROOT,
    ]);
  const started = performance.now();
  const { stdout, stderr } = await build([], IMAGE);
  const buildSeconds = (performance.now() - started) / 1000;
  buildLog = stdout + stderr;
  // The build stage under a name of its own (from the cache: nothing is built again), so that its layers
  // can be scanned and stay cached for the next run when the prune below drops earlier runs' images.
  await build(['--target=build'], BUILD_STAGE_IMAGE);
  const size = Number((await podman.run(['image', 'inspect', '--format', '{{.Size}}', IMAGE])).stdout);
  report(`${IMAGE} built in ${buildSeconds.toFixed(1)} s, ${(size / MEGABYTE).toFixed(0)} MB`);
});

afterAll(async () => {
  // Earlier runs' images, left untagged by this one's: the storage keeps only what the next run reuses.
  await podman.run(['image', 'prune', '--force']);
  await rm(scratch, { recursive: true, force: true });
});

describe('the container image', () => {
  it("builds on an official slim image of the project's own Node.js release", () => {
    expect(base).toEqual({
      name: `docker.io/library/node:${packageJson.devDependencies.node}-bookworm-slim`,
      nodeVersion: packageJson.devDependencies.node,
      debianSuite: 'bookworm',
    });
  });

  // Where npm needs neither (no proxy, a public registry), nothing is passed and nothing can leak.
  it.skipIf(buildSecrets.length === 0)(
    'gets the registry CA and npm configuration as build secrets, in no layer nor log',
    async () => {
      const needles = buildSecrets.flatMap(({ needles }) => needles);
      expect(needles).not.toEqual([]);
      // A line of a root certificate Node.js bundles, which every image holds in its node binary: the
      // proof that the scan reads the layers' bytes.
      const bundledRoot = middleLineOf(rootCertificates[0]!);
      // The build stage too: a pipeline may push its layers as a cache.
      for (const image of [IMAGE, BUILD_STAGE_IMAGE]) {
        const history = await podman.run(['history', '--no-trunc', '--format', '{{.CreatedBy}}', image]);
        const visible = buildLog + history.stdout;
        expect(needles.filter((needle) => visible.includes(needle))).toEqual([]);
        expect(await needlesInLayers(image, [...needles, bundledRoot])).toEqual([bundledRoot]);
      }
    },
  );

  it('runs node on the built code with the V8 flags, as non-root, configured from a fixed path', async () => {
    const inspected = await podman.run(['image', 'inspect', '--format', '{{json .Config}}', IMAGE]);
    const config = JSON.parse(inspected.stdout) as Record<string, unknown>;
    expect(config).toMatchObject({
      User: '1000:1000',
      WorkingDir: '/app',
      Cmd: [
        'node',
        '--max-semi-space-size=16',
        '--heap-growing-percent=50',
        '/app/dist/main.js',
        '--config',
        CONFIG_PATH,
      ],
      ExposedPorts: { '8080/tcp': {}, '9090/tcp': {} },
      StopSignal: 'SIGTERM',
      Labels: expect.objectContaining({
        'org.opencontainers.image.title': 'gengate',
        'org.opencontainers.image.description': expect.stringContaining('gateway') as unknown,
        'org.opencontainers.image.licenses': 'Apache-2.0',
        'org.opencontainers.image.version': packageJson.version,
        'org.opencontainers.image.source': `file://${REPO_ROOT}`,
        'org.opencontainers.image.revision': revision,
      }) as unknown,
    });
    // No entrypoint (the base image's shell script is cleared): node itself receives SIGTERM.
    expect(config.Entrypoint ?? []).toEqual([]);
  });

  it('holds the production dependencies alone, owned by root and not writable by its user', async () => {
    // As the image's own user and on a writable root filesystem: the files themselves are read-only.
    const facts = await podman.run([
      'run',
      '--rm',
      '--entrypoint=sh',
      IMAGE,
      '-c',
      [
        'echo "writable: $(find /app -writable | tr "\\n" " ")"',
        'echo "not owned by root: $(find /app ! -user 0 | tr "\\n" " ")"',
        'echo "package managers: $(ls /usr/local/bin | grep -E "^(npm|npx|yarn|corepack)" | tr "\\n" " ")"',
        'cd /app/node_modules && ls -d * @*/* | grep -v "^@[^/]*$"',
      ].join('\n'),
    ]);
    const [writable, notOwnedByRoot, packageManagers, ...installed] = facts.stdout.trimEnd().split('\n');
    expect([writable, notOwnedByRoot, packageManagers]).toEqual([
      'writable: ',
      'not owned by root: ',
      'package managers: ',
    ]);
    const production = Object.entries(packageLock.packages)
      .filter(([path, entry]) => /^node_modules\/(@[^/]+\/)?[^/]+$/.test(path) && entry.dev !== true)
      .map(([path]) => path.slice('node_modules/'.length));
    // Not the `node` devDependency either: the base image's node runs the code.
    expect(installed.sort()).toEqual(production.sort());
  });

  it('runs as the chart runs it: ready, serves a create, drains on podman stop and exits 0', async () => {
    const [gatewayPort, adminPort, simulatorPort] = [await freePort(), await freePort(), await freePort()];
    const tenantKey = generateTenantKey();
    const configDir = await mkdtemp(join(scratch, 'etc-'));
    await writeFile(
      join(configDir, 'gengate.yaml'),
      [
        `server: { host: 127.0.0.1, port: ${gatewayPort} }`,
        `admin: { host: 127.0.0.1, port: ${adminPort} }`,
        `upstream: { baseUrl: "http://127.0.0.1:${simulatorPort}",`,
        '  credentials: { shared: { env: SHARED_TOKEN } } }',
        `simulator: { enabled: true, host: 127.0.0.1, port: ${simulatorPort} }`,
        'store: { kind: memory }',
        'tenants:',
        '  - id: team-a',
        '    credential: shared',
        `    keys: [{ sha256: "${tenantKey.sha256}", prefix: "${tenantKey.prefix}" }]`,
        '',
      ].join('\n'),
      { mode: 0o644 },
    );
    // Readable by the container's uid, as a mounted ConfigMap is.
    await chmod(configDir, 0o755);
    const container = `gengate-image-test-${process.pid}`;
    try {
      await podman.run([
        'run',
        '--detach',
        `--name=${container}`,
        ...RUN_AS_THE_CHART,
        '--network=host',
        `--volume=${configDir}:/etc/gengate:ro`,
        '--env=SHARED_TOKEN=upstream-token-of-the-test',
        IMAGE,
      ]);
      const adminUrl = `http://127.0.0.1:${adminPort}`;
      await waitFor(
        'the container to be ready',
        async () => (await fetch(`${adminUrl}/readyz`).catch(() => undefined))?.status === 200,
        30_000,
      );

      const created = await fetch(`http://127.0.0.1:${gatewayPort}/v1/images/generations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenantKey.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ input: { positivePrompt: 'a lighthouse at dawn' } }),
      });
      expect(created.status).toBe(200);
      expect(await created.json()).toEqual({
        status: 200,
        data: { requestId: expect.stringMatching(UUID) as unknown },
      });

      await podman.run(['stop', '--time=30', container]);
      const exitCode = await podman.run(['inspect', '--format', '{{.State.ExitCode}}', container]);
      expect(exitCode.stdout.trim()).toBe('0');
      const logs = await podman.run(['logs', container]);
      const messages = logs.stdout
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line) as { msg: string; signal?: string });
      expect(messages.slice(-2)).toEqual([
        expect.objectContaining({ msg: 'draining', signal: 'SIGTERM' }),
        expect.objectContaining({ msg: 'stopped' }),
      ]);
    } finally {
      await podman.run(['rm', '--force', '--ignore', container]);
    }
  });
});

/** The needles found anywhere in `image`'s layers, read uncompressed from `podman save`'s archive. */
async function needlesInLayers(image: string, needles: string[]): Promise<string[]> {
  const archive = join(scratch, 'layers.tar');
  await podman.run(['save', '--format=docker-archive', `--output=${archive}`, image]);
  const found = new Set<string>();
  // A needle cut in two by a chunk boundary is found in the next window.
  const overlap = Math.max(...needles.map((needle) => Buffer.byteLength(needle))) - 1;
  let carried = Buffer.alloc(0);
  for await (const chunk of createReadStream(archive, { highWaterMark: 16 << 20 })) {
    const window = Buffer.concat([carried, chunk as Buffer]);
    for (const needle of needles) if (window.includes(needle)) found.add(needle);
    carried = window.subarray(Math.max(0, window.length - overlap));
  }
  await rm(archive);
  return [...found];
}
