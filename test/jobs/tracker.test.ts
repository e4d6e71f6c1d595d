// The job tracker (src/jobs/tracker.ts) against the simulator over a socket and a real Redis: two
// trackers (two replicas' connections) together stay within the configured polls per second per
// credential, measured at the simulator, and the upstream's 429 puts a job off by its Retry-After.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { JobsConfig } from '../../src/config/schema.ts';
import type { JobTracker } from '../../src/jobs/tracker.ts';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.ts';
import type { GatewayStore } from '../../src/store/gateway-store.ts';
import { openJobStore, trackerOnStore } from './support/job-store.ts';
import { createUpstreamClient, type UpstreamClient } from '../../src/upstream/client.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { waitFor } from '../support/wait-for.ts';

const TOKEN = 'tracker-test-token';
const STALLED_JOBS = 20;

let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedisServer();
});
afterAll(async () => {
  await redis.stop();
});

interface Replica {
  store: GatewayStore;
  upstream: UpstreamClient;
  tracker: JobTracker;
}

async function startReplica(simulator: SimulatorServer, config: JobsConfig): Promise<Replica> {
  const store = await openJobStore({
    redisUrl: redis.url,
    keyPrefix: `t${config.maxPollsPerSecondPerCredential}:`,
    failMode: 'open',
    commandTimeoutMs: 2_000,
    leaseMs: config.leaseMs,
  });
  const upstream = createUpstreamClient({ baseUrl: simulator.url, timeoutMs: 5_000 });
  const tracker = trackerOnStore(store, { upstream, token: TOKEN, config });
  return { store, upstream, tracker };
}

/** Stalled jobs created at the simulator and reserved and submitted in the store. */
async function stalledJobs(simulator: SimulatorServer, store: GatewayStore, count: number): Promise<void> {
  simulator.faults.set({ stallJob: true });
  for (let index = 0; index < count; index += 1) {
    const requestId = randomUUID();
    const response = await fetch(`${simulator.url}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ requestId }),
    });
    expect(response.status).toBe(200);
    const reservation = {
      route: 'images.create' as const,
      credential: 'shared',
      costMicroUsd: 0,
      dailyMicroUsd: undefined,
      monthlyMicroUsd: undefined,
      tenantMaxInFlight: undefined,
      credentialMaxInFlight: undefined,
    };
    await store.admission.admit('team-a', [], { requestId, intent: 'claim' }, reservation);
    await store.jobs.submitted(requestId, 0);
  }
  simulator.faults.clear();
}

const pollTimesAt = (simulator: SimulatorServer) =>
  simulator.received
    .filter((entry) => entry.method === 'GET' && entry.url.startsWith('/v1/images/generations/'))
    .map((entry) => entry.at);
const pollsAt = (simulator: SimulatorServer) => pollTimesAt(simulator).length;

/** The most of `times` (ms) that fall within any `windowMs`. */
function mostWithin(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let first = 0, last = 0; last < sorted.length; last += 1) {
    while ((sorted[last] as number) - (sorted[first] as number) >= windowMs) first += 1;
    most = Math.max(most, last - first + 1);
  }
  return most;
}

async function stop(replicas: Replica[], simulator: SimulatorServer): Promise<void> {
  for (const replica of replicas) {
    await replica.tracker.stop();
    await replica.upstream.close();
    await replica.store.close();
  }
  await simulator.close();
}

test('two trackers together poll at most maxPollsPerSecondPerCredential (measured at the upstream)', async () => {
  const simulator = await startSimulator({
    host: '127.0.0.1',
    port: 0,
    tokens: [{ name: 'shared', token: TOKEN }],
    requestsPerMinute: 1_000_000,
    maxQueued: 1_000,
  });
  // Without the rate, 20 jobs due every 10 ms would be polled about 2000 times a second.
  const config = {
    leaseMs: 200,
    maxAgeSeconds: 86_400,
    maxPollsPerSecondPerCredential: 5,
    firstPollMs: 10,
    maxPollIntervalMs: 10,
  };
  const replicas = [await startReplica(simulator, config), await startReplica(simulator, config)];
  try {
    await stalledJobs(simulator, replicas[0]!.store, STALLED_JOBS);
    const before = pollsAt(simulator);
    const started = performance.now();
    for (const replica of replicas) replica.tracker.start();
    await waitFor('ten polls', () => pollsAt(simulator) - before >= 10);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const polls = pollsAt(simulator) - before;
    const seconds = (performance.now() - started) / 1000;
    expect(polls).toBeLessThanOrEqual(5 * Math.ceil(seconds));
    // At most 5 in any second, from the first poll on: no burst after the idle start. Measured where
    // they arrive, so two polls leased a second apart may land up to the network's jitter closer: the
    // window allows 500 ms of it. Regression: a GCRA rate let a second's worth go at once after an idle
    // spell, then the rate: 7 or more polls in the first 500 ms.
    expect(mostWithin(pollTimesAt(simulator).slice(before), 500)).toBeLessThanOrEqual(5);
  } finally {
    await stop(replicas, simulator);
  }
});

test("the upstream's 429 puts a job off by its Retry-After", async () => {
  // Five requests a minute: the sixth is answered 429 with a Retry-After of about 12 s.
  const simulator = await startSimulator({
    host: '127.0.0.1',
    port: 0,
    tokens: [{ name: 'shared', token: TOKEN }],
    requestsPerMinute: 5,
    maxQueued: 1_000,
  });
  const config = {
    leaseMs: 200,
    maxAgeSeconds: 86_400,
    maxPollsPerSecondPerCredential: 50,
    firstPollMs: 10,
    maxPollIntervalMs: 10,
  };
  const replicas = [await startReplica(simulator, config)];
  try {
    // 3 creates spend 3 of the 5; the 3 jobs' polls spend the rest, then meet 429s.
    await stalledJobs(simulator, replicas[0]!.store, 3);
    replicas[0]!.tracker.start();
    const refused = () => simulator.received.filter((entry) => entry.method === 'GET').length;
    await waitFor('the polls to meet the limit', () => refused() >= 5);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    // Two polls admitted, then at most one 429 per job: each job waits out its Retry-After (~12 s).
    expect(refused()).toBeLessThanOrEqual(2 + 3);
  } finally {
    await stop(replicas, simulator);
  }
});
