// docs/budgets.md, "Following every job", through the real interfaces: two gateway processes on one Redis
// follow jobs created through them, with no client polling. Their trackers together stay within
// jobs.maxPollsPerSecondPerCredential (counted by the simulator, per credential), and the upstream's 429
// puts a job off by its Retry-After.
import { afterEach, expect, test } from 'vitest';
import type { SimulatorOptions } from '../../src/simulator/app.ts';
import type { SimulatorServer } from '../../src/simulator/server.ts';
import {
  startGatewayProcess,
  startSharedTokenSimulator,
  writeTempConfig,
  type GatewayProcess,
} from '../support/gateway-process.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { CANARY_UPSTREAM_TOKENS, canaryTenantKey } from '../support/secret-canary.ts';
import { waitFor } from '../support/wait-for.ts';

const KEY = canaryTenantKey();
const REPLICAS = 2;
// The time over which the poll rate is measured: several seconds.
const MEASURE_MS = 3_000;

let redis: RedisServer | undefined;
let simulator: SimulatorServer | undefined;
let replicas: GatewayProcess[] = [];

afterEach(async () => {
  for (const replica of replicas) {
    replica.signal('SIGTERM');
    await replica.exited;
  }
  replicas = [];
  await simulator?.close();
  await redis?.stop();
});

async function start(simulatorOptions: Partial<SimulatorOptions>, jobs: string): Promise<void> {
  redis = await startRedisServer();
  simulator = await startSharedTokenSimulator({ maxQueued: 1_000, ...simulatorOptions });
  const configPath = await writeTempConfig(
    [
      'server: { host: 127.0.0.1, port: 0, overload: { maxEventLoopDelayMs: 0, maxHeapUsedRatio: 1, maxRssRatio: 1, maxQueueWaitMs: 0 } }',
      'admin: { host: 127.0.0.1, port: 0 }',
      `upstream: { baseUrl: "${simulator.url}", credentials: { shared: { env: SHARED_TOKEN } } }`,
      `store: { kind: redis, redis: { url: "${redis.url}", commandTimeoutMs: 2000 } }`,
      `jobs: ${jobs}`,
      'tenants:',
      '  - id: team-a',
      '    credential: shared',
      `    keys: [{ sha256: "${KEY.sha256}", prefix: "${KEY.prefix}" }]`,
      '',
    ].join('\n'),
  );
  replicas = await Promise.all(
    Array.from({ length: REPLICAS }, () =>
      startGatewayProcess(configPath, { SHARED_TOKEN: CANARY_UPSTREAM_TOKENS.shared }),
    ),
  );
}

/** Jobs that never end, created through the replicas in turn, all at once. */
async function stalledJobs(count: number): Promise<void> {
  simulator!.faults.set({ stallJob: true });
  const statuses = await Promise.all(
    Array.from({ length: count }, async (_, index) => {
      const url = `${replicas[index % REPLICAS]!.gatewayUrl}/v1/images/generations`;
      const response = await fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY.key}`, 'content-type': 'application/json' },
        body: '{}',
      });
      return response.status;
    }),
  );
  expect(statuses).toEqual(Array(count).fill(200));
  simulator!.faults.clear();
}

const trackerPolls = () => simulator!.polls.get('shared') ?? 0;

async function pollsCounted(result: string): Promise<number> {
  let sum = 0;
  for (const replica of replicas) {
    const text = await (await fetch(`${replica.adminUrl}/metrics`)).text();
    const line = text
      .split('\n')
      .find((entry) =>
        entry.startsWith(`gengate_tracker_polls_total{credential="shared",result="${result}"}`),
      );
    sum += Number(line?.split(' ')[1] ?? 'NaN');
  }
  return sum;
}

test('two replicas together poll a credential at most maxPollsPerSecondPerCredential (measured at the upstream)', async () => {
  // Without the rate, 20 jobs due every 10 ms would be polled about 2000 times a second.
  await start(
    { requestsPerMinute: 1_000_000, queuedMs: 0, processingMs: 0 },
    '{ leaseMs: 500, firstPollMs: 10, maxPollIntervalMs: 10, maxPollsPerSecondPerCredential: 5 }',
  );
  await stalledJobs(20);
  await waitFor('the trackers polling', () => trackerPolls() >= 5);
  const before = trackerPolls();
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, MEASURE_MS));
  const polls = trackerPolls() - before;
  const seconds = (performance.now() - started) / 1_000;
  // At most 5 in any second over both replicas (test/jobs/tracker.test.ts checks each second).
  expect(polls).toBeLessThanOrEqual(5 * Math.ceil(seconds));
  // And they do poll at about that rate: the limit, not idleness, is what holds them.
  // (Less a second's worth for each replica that a busy machine may have stalled for as long.)
  expect(polls).toBeGreaterThanOrEqual(Math.floor(5 * seconds) - 10);
  expect(await pollsCounted('running')).toBeGreaterThanOrEqual(polls);
}, 60_000);

test("the upstream's 429 puts a job off by its Retry-After, on every replica", async () => {
  // Five requests a minute: the two replicas' start-up credential checks and the 3 creates spend them;
  // then each poll meets a 429 with a Retry-After of about 12 s. The first poll waits for all 3 creates;
  // then every 10 ms.
  await start(
    { requestsPerMinute: 5, queuedMs: 0, processingMs: 0 },
    '{ leaseMs: 500, firstPollMs: 1000, maxPollIntervalMs: 10, maxPollsPerSecondPerCredential: 50 }',
  );
  await stalledJobs(3);
  await waitFor('the polls to meet the limit', async () => (await pollsCounted('rate_limited')) >= 1);
  await new Promise((resolve) => setTimeout(resolve, MEASURE_MS));
  // Without the back-off, 3 jobs due every 10 ms would be polled about 300 times a second.
  expect(trackerPolls()).toBeLessThanOrEqual(2 + 3);
  expect(await pollsCounted('rate_limited')).toBeLessThanOrEqual(3);
}, 60_000);
