// The container image (docs/deploy.md#the-container-image): the real Dockerfile built with podman on a local stand-in
// for its base image (no registry can be pulled from here), inspected, and run the way the Helm chart
// runs it: another non-root uid, a read-only root filesystem, no capabilities, no new privileges, a
// tmpfs for /tmp, the configuration mounted at its fixed path. Then published as an operator would: the
// image and the packaged chart pushed to a real OCI registry on loopback, the chart pulled back by
// version and rendered, the image pulled back by digest and run, and the chart's helm test run on it.
import { execFile } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { rootCertificates } from 'node:tls';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { generateTenantKey } from '../../src/auth/keys.ts';
import { freePort } from '../support/free-port.ts';
import { waitFor } from '../support/wait-for.ts';
import {
  CHART_DIRECTORY,
  findManifest,
  parseManifests,
  render,
  valuesFile,
  type Manifest,
} from './support/helm.ts';
import { startOciRegistry, type OciRegistry } from './support/oci-registry.ts';
import { startTlsRedis } from '../support/tls-redis.ts';
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
  packages: Record<string, { dev?: boolean; optional?: boolean; os?: string[]; cpu?: string[] }>;
};
const chartVersion = (
  parseYaml(await readFile(join(CHART_DIRECTORY, 'Chart.yaml'), 'utf8')) as { version: string }
).version;
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
    // An optional package built for another platform than the image's (linux, this machine's cpu) is
    // rightly left out by npm.
    const forTheImage = (entry: { os?: string[]; cpu?: string[] }) =>
      (entry.os?.includes('linux') ?? true) && (entry.cpu?.includes(process.arch) ?? true);
    const production = Object.entries(packageLock.packages)
      .filter(
        ([path, entry]) =>
          /^node_modules\/(@[^/]+\/)?[^/]+$/.test(path) && entry.dev !== true && forTheImage(entry),
      )
      .map(([path]) => path.slice('node_modules/'.length));
    // Not the `node` devDependency either: the base image's node runs the code.
    expect(installed.sort()).toEqual(production.sort());
  });

  it('runs as the chart runs it: ready, serves a create, drains on podman stop and exits 0', async () => {
    const gateway = await startGatewayContainer(IMAGE);
    try {
      const created = await fetch(`${gateway.gatewayUrl}/v1/images/generations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gateway.tenantKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ input: { positivePrompt: 'a lighthouse at dawn' } }),
      });
      expect(created.status).toBe(200);
      expect(await created.json()).toEqual({
        status: 200,
        data: { requestId: expect.stringMatching(UUID) as unknown },
      });

      await podman.run(['stop', '--time=30', gateway.container]);
      const exitCode = await podman.run(['inspect', '--format', '{{.State.ExitCode}}', gateway.container]);
      expect(exitCode.stdout.trim()).toBe('0');
      const logs = await podman.run(['logs', gateway.container]);
      const messages = logs.stdout
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line) as { msg: string; signal?: string });
      expect(messages.slice(-2)).toEqual([
        expect.objectContaining({ msg: 'draining', signal: 'SIGTERM' }),
        expect.objectContaining({ msg: 'stopped' }),
      ]);
    } finally {
      await gateway.remove();
    }
  });

  it('reaches a Redis Cluster with a password and TLS through the files and configuration the chart gives it', async () => {
    const started = performance.now();
    const password = 'cluster-password-of-the-test';
    const cluster = await startTlsRedis({ cluster: true, password });
    let gateway: GatewayContainer | undefined;
    try {
      // The chart's rendering for such a Cluster, pointed at the test's (whose certificate names localhost).
      const manifests = render([
        ...valuesFile('redis-tls-values.yaml'),
        '--set',
        'redis.username=',
        '--set',
        'redis.tls.serverName=localhost',
        '--set-json',
        `config.store.redis.nodes=${JSON.stringify(cluster.nodes)}`,
        '--set',
        'config.store.failMode=closed',
      ]);
      const configMap = findManifest(manifests, 'ConfigMap') as unknown as { data: Record<string, string> };
      const { store } = parseYaml(configMap.data['gengate.yaml']!) as { store: unknown };
      // The two Secrets' keys as files, where and as the chart's projected volume puts them.
      const deployment = findManifest(manifests, 'Deployment') as unknown as {
        spec: { template: { spec: ChartPodSpec } };
      };
      const { containers, volumes } = deployment.spec.template.spec;
      const mountPath = containers[0]!.volumeMounts.find(
        (mount) => mount.name === 'redis-credentials',
      )!.mountPath;
      const [passwordItem, caItem] = volumes
        .find((volume) => volume.name === 'redis-credentials')!
        .projected!.sources.map((source) => source.secret.items[0]!.path);
      const secrets = await mkdtemp(join(scratch, 'redis-secrets-'));
      await writeFile(join(secrets, passwordItem!), `${password}\n`, { mode: 0o644 });
      await writeFile(join(secrets, caItem!), await readFile(cluster.certificates.caFile), { mode: 0o644 });
      await chmod(secrets, 0o755);

      // Ready only once it reaches the store: the store fails closed.
      gateway = await startGatewayContainer(IMAGE, { store, volumes: [`${secrets}:${mountPath}:ro`] });
      const created = await fetch(`${gateway.gatewayUrl}/v1/images/generations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gateway.tenantKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ input: { positivePrompt: 'a lighthouse at dawn' } }),
      });
      expect(created.status).toBe(200);
      const keyCounts = await Promise.all(cluster.ports.map((_, index) => cluster.client(index).dbsize()));
      expect(keyCounts.reduce((sum, count) => sum + count, 0)).toBeGreaterThan(0);
    } finally {
      await gateway?.remove();
      await cluster.stop();
    }
    report(
      `gengate on a TLS Redis Cluster with a password in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  });

  it("runs the image's own command line, with the chart's extraArgs before gengate's script", async () => {
    const inspected = await podman.run(['image', 'inspect', '--format', '{{json .Config.Cmd}}', IMAGE]);
    const imageCommand = JSON.parse(inspected.stdout) as string[];
    const container = chartContainer(
      render([...valuesFile('default-values.yaml'), '--set-json', 'extraArgs=["--max-old-space-size=300"]']),
    );
    const script = imageCommand.indexOf('/app/dist/main.js');
    expect([...container.command!, ...container.args!]).toEqual([
      ...imageCommand.slice(0, script),
      '--max-old-space-size=300',
      ...imageCommand.slice(script),
    ]);
  });
});

describe('published to an OCI registry and installed from it', () => {
  let registry: OciRegistry;
  let helmHome: NodeJS.ProcessEnv;
  // Filled by the first test, read by the second.
  let imageDigest = '';
  let pulledChart: Manifest[] = [];
  const helmOci = async (args: string[]) =>
    execFileAsync('helm', args, {
      cwd: REPO_ROOT,
      env: { ...process.env, ...helmHome },
      maxBuffer: 64 << 20,
    });

  beforeAll(async () => {
    const started = performance.now();
    registry = await startOciRegistry();
    const home = await mkdtemp(join(scratch, 'helm-home-'));
    // Helm's registry logins, cache and repositories in scratch: the machine's own stay untouched.
    helmHome = {
      HELM_REGISTRY_CONFIG: join(home, 'registry.json'),
      HELM_CACHE_HOME: join(home, 'cache'),
      HELM_CONFIG_HOME: join(home, 'config'),
      HELM_DATA_HOME: join(home, 'data'),
    };
    report(`registry ${registry.host} started in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  });
  afterAll(async () => {
    await registry.stop();
  });

  it('pushes the image and the packaged chart, and renders the chart pulled back by version from oci://', async () => {
    const started = performance.now();
    const repository = `${registry.host}/gengate/gengate`;
    const digestFile = join(scratch, 'image.digest');
    await podman.run([
      'push',
      '--tls-verify=false',
      `--digestfile=${digestFile}`,
      IMAGE,
      `docker://${repository}:${packageJson.version}`,
    ]);
    imageDigest = (await readFile(digestFile, 'utf8')).trim();
    expect(imageDigest).toMatch(/^sha256:[0-9a-f]{64}$/);

    const packaged = await helmOci(['package', CHART_DIRECTORY, '--destination', scratch]);
    const archive = /saved it to: (\S+\.tgz)/.exec(packaged.stdout)?.[1];
    expect(archive).toBe(join(scratch, `gengate-${chartVersion}.tgz`));
    const pushed = await helmOci(['push', archive!, `oci://${registry.host}/charts`, '--plain-http']);
    expect(pushed.stdout + pushed.stderr).toContain(
      `Pushed: ${registry.host}/charts/gengate:${chartVersion}`,
    );

    // As an operator installs it: by version, from the registry, pinned to the image's digest.
    const values = [
      ...valuesFile('default-values.yaml'),
      '--set',
      `image.repository=${repository}`,
      '--set',
      `image.digest=${imageDigest}`,
    ];
    const fromRegistry = await helmOci([
      'template',
      'prod',
      `oci://${registry.host}/charts/gengate`,
      '--version',
      chartVersion,
      '--plain-http',
      '--namespace',
      'gateways',
      ...values,
    ]);
    pulledChart = parseManifests(fromRegistry.stdout);
    expect(pulledChart).toEqual(render(values));
    expect(chartContainer(pulledChart).image).toBe(`${repository}@${imageDigest}`);
    report(
      `image and chart pushed and the chart pulled back in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  });

  it("runs the image pulled back by digest, and the pulled chart's helm test passes against it", async () => {
    expect(imageDigest, 'the push above failed').not.toBe('');
    const started = performance.now();
    const reference = chartContainer(pulledChart).image;
    await podman.run(['pull', '--tls-verify=false', reference]);
    try {
      const pulled = await podman.run(['image', 'inspect', '--format', '{{json .RepoDigests}}', reference]);
      expect(JSON.parse(pulled.stdout)).toContain(reference);

      const gateway = await startGatewayContainer(reference);
      try {
        const testPod = pulledChart.find((manifest) => manifest.kind === 'Pod') as unknown as {
          spec: { containers: { image: string; command: string[]; args: string[] }[] };
        };
        const [test] = testPod.spec.containers;
        expect(test!.image).toBe(reference);
        // The pod's command as the kubelet runs it, with the Services' addresses on loopback instead.
        const runTest = (gatewayUrl: string) =>
          podman.run([
            'run',
            '--rm',
            ...RUN_AS_THE_CHART,
            '--network=host',
            `--env=GENGATE_ADMIN_URL=${gateway.adminUrl}`,
            `--env=GENGATE_GATEWAY_URL=${gatewayUrl}`,
            test!.image,
            ...test!.command,
            ...test!.args,
          ]);
        const passed = await runTest(gateway.gatewayUrl);
        expect(passed.stdout).toBe(
          `ok: ${gateway.adminUrl}/readyz is ready; ${gateway.gatewayUrl} refuses a request without a key (401 missing_api_key)\n`,
        );
        // Pointed at something that is not gengate's gateway (its admin port), the test fails.
        const failed: unknown = await runTest(gateway.adminUrl).catch((error: unknown) => error);
        expect(String((failed as { stderr?: string }).stderr)).toContain(
          `helm test failed: ${gateway.adminUrl}/v1/account/usage answered 404, not 401`,
        );
      } finally {
        await gateway.remove();
      }
    } finally {
      // The pulled image has layers of its own (the registry keeps them compressed): not kept for the next run.
      await podman.run(['image', 'rm', reference]);
    }
    report(
      `image pulled by digest and run, helm test run, in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  });
});

interface GatewayContainer {
  container: string;
  gatewayUrl: string;
  adminUrl: string;
  tenantKey: string;
  remove(): Promise<void>;
}

let containers = 0;

/** `image` run as the chart runs it, on loopback with the built-in simulator; resolves once it is ready. */
/**
 * `image` run as the chart runs it, on loopback with the built-in simulator as its upstream and one
 * tenant; resolves once it is ready. `store` (default: memory) and extra `--volume`s are the caller's.
 */
async function startGatewayContainer(
  image: string,
  options: { store?: unknown; volumes?: string[] } = {},
): Promise<GatewayContainer> {
  const [gatewayPort, adminPort, simulatorPort] = [await freePort(), await freePort(), await freePort()];
  const tenantKey = generateTenantKey();
  const configDir = await mkdtemp(join(scratch, 'etc-'));
  const config = {
    server: { host: '127.0.0.1', port: gatewayPort },
    admin: { host: '127.0.0.1', port: adminPort },
    upstream: {
      baseUrl: `http://127.0.0.1:${simulatorPort}`,
      credentials: { shared: { env: 'SHARED_TOKEN' } },
    },
    simulator: { enabled: true, host: '127.0.0.1', port: simulatorPort },
    store: options.store ?? { kind: 'memory' },
    tenants: [
      { id: 'team-a', credential: 'shared', keys: [{ sha256: tenantKey.sha256, prefix: tenantKey.prefix }] },
    ],
  };
  await writeFile(join(configDir, 'gengate.yaml'), stringifyYaml(config), { mode: 0o644 });
  // Readable by the container's uid, as a mounted ConfigMap is.
  await chmod(configDir, 0o755);
  const container = `gengate-image-test-${process.pid}-${++containers}`;
  const remove = async () => {
    await podman.run(['rm', '--force', '--ignore', container]);
  };
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  try {
    await podman.run([
      'run',
      '--detach',
      `--name=${container}`,
      ...RUN_AS_THE_CHART,
      '--network=host',
      `--volume=${configDir}:/etc/gengate:ro`,
      ...(options.volumes ?? []).map((volume) => `--volume=${volume}`),
      '--env=SHARED_TOKEN=upstream-token-of-the-test',
      image,
    ]);
    await waitFor(
      'the container to be ready',
      async () => (await fetch(`${adminUrl}/readyz`).catch(() => undefined))?.status === 200,
      30_000,
    );
  } catch (error) {
    await remove();
    throw error;
  }
  return {
    container,
    gatewayUrl: `http://127.0.0.1:${gatewayPort}`,
    adminUrl,
    tenantKey: tenantKey.key,
    remove,
  };
}

interface ChartPodSpec {
  containers: { volumeMounts: { name: string; mountPath: string }[] }[];
  volumes: { name: string; projected?: { sources: { secret: { items: { path: string }[] } }[] } }[];
}

interface ChartContainer {
  image: string;
  command?: string[];
  args?: string[];
}

/** The gengate container of the Deployment the chart renders. */
function chartContainer(manifests: readonly Manifest[]): ChartContainer {
  const deployment = findManifest(manifests, 'Deployment') as unknown as {
    spec: { template: { spec: { containers: (ChartContainer & { name: string })[] } } };
  };
  return deployment.spec.template.spec.containers.find((container) => container.name === 'gengate')!;
}

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
