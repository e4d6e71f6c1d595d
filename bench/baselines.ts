// The processes around the proxy under test that are not gengate: the static upstream, the bare
// @fastify/http-proxy baseline and nginx.
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ALLOCATION_SAMPLER_FLAGS } from './allocation.ts';
import { PRODUCTION_NODE_FLAGS } from './gengate.ts';
import {
  LOAD_CORE,
  PROXY_CORE,
  findExecutable,
  freePort,
  spawnPinned,
  waitForPort,
  type BenchProcess,
} from './processes.ts';

const START_TIMEOUT_MS = 10_000;
const STATIC_UPSTREAM = fileURLToPath(new URL('static-upstream.ts', import.meta.url));
const BARE_PROXY = fileURLToPath(new URL('bare-proxy.ts', import.meta.url));
const FASTIFY_FORWARD = fileURLToPath(new URL('fastify-forward.ts', import.meta.url));
const LEAST_GATEWAY = fileURLToPath(new URL('least-gateway.ts', import.meta.url));
const NGINX_TEMPLATE = fileURLToPath(new URL('nginx.conf.template', import.meta.url));

export interface Listening {
  process: BenchProcess;
  port: number;
}

async function startNodeScript(
  name: string,
  core: number,
  script: string,
  args: string[],
  nodeFlags: readonly string[] = [],
  stdoutFile?: string,
): Promise<Listening> {
  const port = await freePort();
  const child = spawnPinned(
    name,
    core,
    process.execPath,
    [...nodeFlags, script, '--port', String(port), ...args],
    stdoutFile === undefined ? {} : { stdoutFile },
  );
  await waitForPort(child, port, START_TIMEOUT_MS);
  return { process: child, port };
}

/** Pinned beside the load generator: it is the floor every proxy is compared with, not a subject. */
export function startStaticUpstream(): Promise<Listening> {
  return startNodeScript('upstream', LOAD_CORE, STATIC_UPSTREAM, []);
}

export function startBareProxy(upstreamUrl: string): Promise<Listening> {
  return startNodeScript(
    'bare-proxy',
    PROXY_CORE,
    BARE_PROXY,
    ['--upstream', upstreamUrl],
    [...PRODUCTION_NODE_FLAGS, ...ALLOCATION_SAMPLER_FLAGS],
  );
}

/** gengate's floor: Fastify and gengate's upstream client, with the same V8 flags as gengate. */
export function startFastifyForward(upstreamUrl: string): Promise<Listening> {
  return startNodeScript(
    'fastify-forward',
    PROXY_CORE,
    FASTIFY_FORWARD,
    ['--upstream', upstreamUrl],
    [...PRODUCTION_NODE_FLAGS, ...ALLOCATION_SAMPLER_FLAGS],
  );
}

/** What bench/least-gateway.ts adds to the floor (its options). */
export interface LeastWork {
  /** The key, the body judged by the schema, the metrics. */
  checks: boolean;
  /** One log line per request. */
  log: boolean;
  /** One script call per request to this Redis. */
  redisUrl: string | undefined;
}

/** The floor plus the least a gateway keeping the contract does per create, as deployed. */
export function startLeastGateway(upstreamUrl: string, work: LeastWork, logFile: string): Promise<Listening> {
  return startNodeScript(
    'least-gateway',
    PROXY_CORE,
    LEAST_GATEWAY,
    [
      '--upstream',
      upstreamUrl,
      ...(work.checks ? ['--checks'] : []),
      ...(work.log ? ['--log'] : []),
      ...(work.redisUrl === undefined ? [] : ['--redis', work.redisUrl]),
    ],
    PRODUCTION_NODE_FLAGS,
    logFile,
  );
}

/** nginx, or undefined when it is not installed (it is a reference, not a requirement). */
export async function startNginx(workDir: string, upstreamPort: number): Promise<Listening | undefined> {
  const executable = findExecutable('nginx');
  if (executable === undefined) return undefined;
  const port = await freePort();
  const configFile = join(workDir, 'nginx.conf');
  writeFileSync(
    configFile,
    readFileSync(NGINX_TEMPLATE, 'utf8')
      .replaceAll('{{DIR}}', workDir)
      .replaceAll('{{PORT}}', String(port))
      .replaceAll('{{UPSTREAM_PORT}}', String(upstreamPort)),
  );
  // When started as root, nginx's workers run as an unprivileged user that must reach its temp paths.
  chmodSync(workDir, 0o755);
  const nginx = spawnPinned('nginx', PROXY_CORE, executable, [
    '-e',
    join(workDir, 'nginx-error.log'),
    '-c',
    configFile,
    '-g',
    'daemon off;',
  ]);
  await waitForPort(nginx, port, START_TIMEOUT_MS);
  return { process: nginx, port };
}
