// Runs `src/main.ts` as its own process, as operators do, and reads its JSON log lines. It logs at trace
// unless told otherwise, and the secret canary searches all it writes (secret-canary.ts).
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { SimulatorOptions } from '../../src/simulator/app.ts';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.ts';
import { killedOnExit } from './killed-on-exit.ts';
import { makeTempFolder } from './temp-folders.ts';
import { CANARY_UPSTREAM_TOKENS, searchProduced, streamSearch } from './secret-canary.ts';

export interface GatewayProcess {
  child: ChildProcessWithoutNullStreams;
  signal(name: NodeJS.Signals): void;
  gatewayUrl: string;
  adminUrl: string;
  lines: Record<string, unknown>[];
  stderr: string[];
  exited: Promise<number | null>;
}

interface ListenAddress {
  address: string;
  port: number;
}

function urlOf(address: ListenAddress): string {
  return `http://127.0.0.1:${address.port}`;
}

// Start-up takes about a second; under a fully loaded CI machine, a few.
const READY_TIMEOUT_MS = 20_000;

export async function startGatewayProcess(
  configPath: string,
  env: Record<string, string> = {},
  /** Options for node before the script, e.g. shiftedClock()'s preload. */
  nodeArgs: string[] = [],
): Promise<GatewayProcess> {
  // process.execPath is the Node 24 that runs this test, not the system's.
  const child = killedOnExit(
    spawn(process.execPath, [...nodeArgs, 'src/main.ts', '--config', configPath], {
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'trace', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    }),
  );
  const lines: Record<string, unknown>[] = [];
  const stderr: string[] = [];
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  const searchStderr = streamSearch('the gateway process’s stderr');
  child.stderr.on('data', (chunk: Buffer) => {
    searchStderr(chunk);
    stderr.push(chunk.toString('utf8'));
  });
  let notReady: NodeJS.Timeout | undefined;
  const ready = new Promise<Record<string, unknown>>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      searchProduced('a log line of the gateway process', line);
      const entry = JSON.parse(line) as Record<string, unknown>;
      lines.push(entry);
      if (entry.msg === 'gengate is ready') resolve(entry);
    });
    void exited.then((code) => {
      reject(new Error(`gengate exited with ${code} before it was ready: ${stderr.join('')}`));
    });
    // A gateway that never gets ready is stopped here: the test that started it has no handle on it.
    notReady = setTimeout(() => {
      // Should it have exited meanwhile, this does nothing and the exit rejects the wait as well.
      child.kill('SIGKILL');
      reject(new Error(`gengate was not ready within ${READY_TIMEOUT_MS} ms: ${stderr.join('')}`));
    }, READY_TIMEOUT_MS);
  });
  const readyLine = await ready.finally(() => {
    clearTimeout(notReady);
  });
  return {
    child,
    signal(name) {
      child.kill(name);
    },
    gatewayUrl: urlOf(readyLine.gateway as ListenAddress),
    adminUrl: urlOf(readyLine.admin as ListenAddress),
    lines,
    stderr,
    exited,
  };
}

/**
 * A simulator on a free local port that accepts the canary `shared` upstream token, the credential a
 * oneTenantConfig gateway sends when started with `SHARED_TOKEN: CANARY_UPSTREAM_TOKENS.shared`.
 */
export function startSharedTokenSimulator(options: Partial<SimulatorOptions> = {}): Promise<SimulatorServer> {
  return startSimulator({
    host: '127.0.0.1',
    port: 0,
    tokens: [{ name: 'shared', token: CANARY_UPSTREAM_TOKENS.shared }],
    ...options,
  });
}

export interface OneTenantConfig {
  upstreamUrl: string;
  keys: { sha256: string; prefix: string }[];
  /** The `store:` mapping (flow style); memory by default. */
  store?: string;
  /** More members of `server:`, flow style, e.g. `drainTimeoutMs: 500`. */
  server?: string;
  /** More members of the tenant, e.g. `policy: { … }` or `limits: [ … ]`. */
  tenantYaml?: string[];
  /** `server.overload` (flow style) in place of load shedding off. */
  overload?: string;
}

// Load shedding off: none of the tests on this configuration is about overload (test/overload/ is), and a
// machine loaded by other suites must not answer 503 overloaded in place of what a test looks at.
export const NO_LOAD_SHEDDING =
  'overload: { maxEventLoopDelayMs: 0, maxHeapUsedRatio: 1, maxRssRatio: 1, maxQueueWaitMs: 0 }';

/**
 * A configuration with one tenant, team-a, whose upstream credential `shared` comes from $SHARED_TOKEN,
 * load shedding off unless `overload` sets it.
 */
export function oneTenantConfig(options: OneTenantConfig): string {
  const keys = options.keys.map((key) => `{ sha256: "${key.sha256}", prefix: "${key.prefix}" }`).join(', ');
  const server = [
    'host: 127.0.0.1',
    'port: 0',
    options.overload === undefined ? NO_LOAD_SHEDDING : `overload: ${options.overload}`,
    ...(options.server === undefined ? [] : [options.server]),
  ];
  return [
    `server: { ${server.join(', ')} }`,
    'admin: { host: 127.0.0.1, port: 0 }',
    `upstream: { baseUrl: "${options.upstreamUrl}", credentials: { shared: { env: SHARED_TOKEN } } }`,
    `store: ${options.store ?? '{ kind: memory }'}`,
    'tenants:',
    '  - id: team-a',
    '    credential: shared',
    `    keys: [${keys}]`,
    ...(options.tenantYaml ?? []).map((line) => `    ${line}`),
    '',
  ].join('\n');
}

/** Writes a configuration into a fresh temporary folder (removed after the test file); its path. */
export async function writeTempConfig(text: string): Promise<string> {
  const path = join(await makeTempFolder('gengate-'), 'gengate.yaml');
  await writeFile(path, text);
  return path;
}
