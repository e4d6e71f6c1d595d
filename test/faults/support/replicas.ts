// What every fault scenario stands on: the simulator as the upstream, and gengate replicas as separate
// processes (src/main.ts, as operators run it) sharing one configuration file, with two tenants: `load`,
// whose limit the load never reaches, and `probe`, whose small limit shows whether counting is exact.
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { generateTenantKey, type TenantKey } from '../../../src/auth/keys.ts';
import { startSimulator, type SimulatorServer } from '../../../src/simulator/server.ts';
import { startGatewayProcess, writeTempConfig, type GatewayProcess } from '../../support/gateway-process.ts';
import { runLoad, type LoadRequest } from './load.ts';

const UPSTREAM_TOKEN = 'upstream_token_for_the_fault_suite';
// Refills one unit every half second: a burst of a few ms after the window sees exactly the limit.
export const PROBE_LIMIT = 10;
export const PROBE_WINDOW_SECONDS = 5;

export interface FleetConfig {
  upstreamUrl: string;
  /** The `store:` mapping, flow style. */
  store: string;
  /** The `upstream:` members besides baseUrl and credentials, flow style, e.g. `timeoutMs: 500`. */
  upstreamOptions?: string;
  /** The load tenant's `policy:` and `limits:` members (one line each). */
  loadTenant?: string[];
  /** Fixed ports (for replicas restarted in place); 0 otherwise. */
  port?: number;
  /** More members of `server:`, flow style, e.g. `drainTimeoutMs: 5000`. */
  server?: string;
}

export interface Fleet {
  simulator: SimulatorServer;
  keys: { load: TenantKey; probe: TenantKey };
  configPath: string;
  replicas: GatewayProcess[];
  /** The configuration text with `overrides` (to write in place of the file, for a reload). */
  configText(overrides: Partial<FleetConfig>): string;
  /** Starts one more replica on this configuration, optionally on a fixed port. */
  startReplica(port?: number): Promise<GatewayProcess>;
  stop(): Promise<void>;
}

function fleetConfigText(config: FleetConfig, keys: Fleet['keys']): string {
  const keyOf = (key: TenantKey) => `[{ sha256: "${key.sha256}", prefix: "${key.prefix}" }]`;
  return [
    `server: { host: 127.0.0.1, port: ${config.port ?? 0}${config.server === undefined ? '' : `, ${config.server}`} }`,
    'admin: { host: 127.0.0.1, port: 0 }',
    `upstream: { baseUrl: "${config.upstreamUrl}", credentials: { shared: { env: SHARED_TOKEN } }` +
      `${config.upstreamOptions === undefined ? '' : `, ${config.upstreamOptions}`} }`,
    `store: ${config.store}`,
    'tenants:',
    '  - id: load',
    '    credential: shared',
    `    keys: ${keyOf(keys.load)}`,
    ...(
      config.loadTenant ?? [
        'limits: [{ id: requests, routes: ["*"], cost: requests, limit: 1000000, windowSeconds: 60 }]',
      ]
    ).map((line) => `    ${line}`),
    '  - id: probe',
    '    credential: shared',
    `    keys: ${keyOf(keys.probe)}`,
    '    limits: [{ id: requests, routes: ["*"], cost: requests, ' +
      `limit: ${PROBE_LIMIT}, windowSeconds: ${PROBE_WINDOW_SECONDS} }]`,
    '',
  ].join('\n');
}

/** The simulator (jobs finish at once, no upstream rate limit in the way) and `replicaCount` replicas. */
export async function startFleet(
  replicaCount: number,
  config: Omit<FleetConfig, 'upstreamUrl'> & { upstreamUrl?: string },
): Promise<Fleet> {
  const simulator = await startSimulator({
    host: '127.0.0.1',
    port: 0,
    tokens: [{ name: 'shared', token: UPSTREAM_TOKEN }],
    queuedMs: 0,
    processingMs: 0,
    requestsPerMinute: 10_000_000,
  });
  const keys = { load: generateTenantKey(), probe: generateTenantKey() };
  const base: FleetConfig = { upstreamUrl: simulator.url, ...config };
  const configText = (overrides: Partial<FleetConfig>) => fleetConfigText({ ...base, ...overrides }, keys);
  const configPath = await writeTempConfig(configText({}));
  const replicas: GatewayProcess[] = [];
  const startReplica = async (port?: number) => {
    // A replica on a port of its own reads a copy of the configuration that names it.
    const path = port === undefined ? configPath : `${configPath}.${port}.yaml`;
    if (port !== undefined) await writeFile(path, configText({ port }));
    const replica = await startGatewayProcess(path, { SHARED_TOKEN: UPSTREAM_TOKEN });
    replicas.push(replica);
    return replica;
  };
  const stop = async () => {
    for (const replica of replicas) {
      replica.signal('SIGKILL');
      await replica.exited;
    }
    await simulator.close();
  };
  try {
    for (let index = 0; index < replicaCount; index++) await startReplica();
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    simulator,
    keys,
    configPath,
    replicas,
    configText,
    startReplica,
    stop,
  };
}

/** An image create for `key` through `baseUrl`, with a fresh requestId unless one is given. */
export function imageCreate(baseUrl: string, key: TenantKey, requestId: string = randomUUID()): LoadRequest {
  return {
    url: `${baseUrl}/v1/images/generations`,
    method: 'POST',
    headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ requestId, input: { positivePrompt: 'a lighthouse at dusk' }, samples: 2 }),
    tag: requestId,
  };
}

const WARM_UP_RATE_PER_SECOND = 300;
const WARM_UP_MS = 1_500;

/**
 * A second and a half of creates through every replica: fresh processes compile their hot paths and open
 * their connections under the first load, which would otherwise show as the first scenario's latency.
 */
export async function warmUp(fleet: Fleet): Promise<void> {
  const urls = fleet.replicas.map((replica) => replica.gatewayUrl);
  await runLoad({
    ratePerSecond: WARM_UP_RATE_PER_SECOND,
    durationMs: WARM_UP_MS,
    next: (index) => imageCreate(urls[index % urls.length]!, fleet.keys.load),
  });
}

/** A value of an unlabelled series from a replica's /metrics. */
export async function metricValue(replica: GatewayProcess, name: string): Promise<number> {
  const text = await (await fetch(`${replica.adminUrl}/metrics`)).text();
  const line = text.split('\n').find((each) => each.startsWith(`${name} `));
  if (line === undefined) throw new Error(`${name} is not among the metrics`);
  return Number(line.slice(name.length + 1));
}
