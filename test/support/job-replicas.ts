// Several gateway processes on one shared store and one simulator, for the suites that follow jobs and
// budgets across replicas (test/jobs/): every image sample costs IMAGE_PRICE_USD, the trackers poll fast,
// and load shedding is off (the machine's load is not what they measure). Each suite brings its store
// (one Redis, a frozen one, a Cluster) and its tenants; this starts and stops the rest.
import type { SimulatorServer } from '../../src/simulator/server.ts';
import {
  NO_LOAD_SHEDDING,
  startGatewayProcess,
  startSharedTokenSimulator,
  writeTempConfig,
  type GatewayProcess,
} from './gateway-process.ts';
import { CANARY_UPSTREAM_TOKENS } from './secret-canary.ts';

export const IMAGE_PRICE_USD = 0.01;

export interface JobTenant {
  id: string;
  key: { sha256: string; prefix: string };
  /** The upstream credential it uses; `shared` unless said. */
  credential?: string;
  /** More members of the tenant, each a line, e.g. `budget: { monthlyUsd: 1 }`. */
  members?: string[];
}

export interface JobReplicasOptions {
  replicas: number;
  /** The `store:` mapping, flow style. */
  store: string;
  /** The members of `upstream.credentials`, flow style; each takes its token from $SHARED_TOKEN. */
  credentials?: string;
  tenants: JobTenant[];
}

export interface JobReplicas {
  simulator: SimulatorServer;
  replicas: GatewayProcess[];
  /** SIGTERMs every replica, waits for it to exit, and closes the simulator; the store is the suite's. */
  stop(): Promise<void>;
}

function tenantYaml({ id, key, credential = 'shared', members = [] }: JobTenant): string[] {
  return [
    `  - id: ${id}`,
    `    credential: ${credential}`,
    `    keys: [{ sha256: "${key.sha256}", prefix: "${key.prefix}" }]`,
    ...members.map((member) => `    ${member}`),
  ];
}

export async function startJobReplicas(options: JobReplicasOptions): Promise<JobReplicas> {
  const simulator = await startSharedTokenSimulator({
    queuedMs: 0,
    processingMs: 0,
    requestsPerMinute: 1_000_000,
    maxQueued: 1_000,
    imageUsdPerSample: IMAGE_PRICE_USD,
  });
  const credentials = options.credentials ?? 'shared: { env: SHARED_TOKEN }';
  const configPath = await writeTempConfig(
    [
      `server: { host: 127.0.0.1, port: 0, ${NO_LOAD_SHEDDING} }`,
      'admin: { host: 127.0.0.1, port: 0 }',
      `upstream: { baseUrl: "${simulator.url}", credentials: { ${credentials} } }`,
      `store: ${options.store}`,
      `pricing: { images: [{ model: "*", usdPerSample: ${IMAGE_PRICE_USD} }] }`,
      'jobs: { leaseMs: 1500, firstPollMs: 50, maxPollIntervalMs: 200, maxPollsPerSecondPerCredential: 200 }',
      'tenants:',
      ...options.tenants.flatMap(tenantYaml),
      '',
    ].join('\n'),
  );
  const replicas = await Promise.all(
    Array.from({ length: options.replicas }, () =>
      startGatewayProcess(configPath, { SHARED_TOKEN: CANARY_UPSTREAM_TOKENS.shared }),
    ),
  );
  return {
    simulator,
    replicas,
    async stop() {
      for (const replica of replicas) {
        replica.signal('SIGTERM');
        await replica.exited;
      }
      await simulator.close();
    },
  };
}

/** A create sent to `replica` with the tenant key `key`. */
export function createOn(
  replica: GatewayProcess,
  key: string,
  route: 'images' | 'videos',
  body: string,
): Promise<Response> {
  return fetch(`${replica.gatewayUrl}/v1/${route}/generations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body,
  });
}
