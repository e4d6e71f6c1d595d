// Overload (docs/reliability.md, "Overload"): one replica offered four times its measured capacity (at
// most MAX_FLOOD_RATE) for 5 s, in heavy but valid submissions on new connections at a fixed rate (an open
// loop: clients that do not wait for each other), answers nearly every request within a second, with 200
// or a fast 503 overloaded and Retry-After, rather than serving them late or leaving the kernel to reset
// them; and within a second of the flood's end it serves an ordinary request at once, because what was
// queued during the flood was shed rather than served late.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { generateTenantKey } from '../../src/auth/keys.ts';
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { startGatewayProcess, writeTempConfig, type GatewayProcess } from '../support/gateway-process.ts';
import { waitFor } from '../support/wait-for.ts';
import type { Outcome } from './support/load.ts';
import { closedLoop, openLoop, rawPost } from './support/open-loop.ts';
import { createFaultReport } from './support/report.ts';

const UPSTREAM_TOKEN = 'upstream_token_for_the_flood';
// A heavy submission: a seed image of about 38 KB in base64, valid against the schema and the policy.
const SEED_IMAGE_BYTES = 38_000;
const FLOOD_FACTOR = 4;
// The flood's rate at most: on the 2-core VM the generator, the simulator and the replica share, floods
// of 4,352 and 6,000 connections a second (each carrying 38 KB) overflowed the replica's accept queue in
// some runs, whether or not the generator kept its schedule (docs/reliability.md, "Overload"): one core
// sheds about that many, so four times a capacity of more than 750 a second measures the rig, not the
// shedding. At 3,000 a second every run answered all of them within a second.
const MAX_FLOOD_RATE = 3_000;
const FLOOD_MS = 5_000;
const CAPACITY_CLIENTS = 16;
const CAPACITY_MS = 3_000;
const WARM_UP_MS = 2_000;
// Ordinary requests after the flood: one every 100 ms for 2 s from its end.
const PROBE_RATE_PER_SECOND = 10;
const PROBE_MS = 2_000;
// What a client may wait for an answer, and what an ordinary request may take a second after the flood.
const ANSWERED_WITHIN_MS = 1_000;
const ANSWERED_SHARE = 0.95;
const RECOVERED_AFTER_MS = 1_000;
const ORDINARY_WITHIN_MS = 200;

const report = createFaultReport('flood');
let simulator: Worker | undefined;
let replica: GatewayProcess | undefined;
let port: number;
let adminUrl: string;
const key = generateTenantKey();
const headers = { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' };

function heavyCreate(): string {
  const seedImage = `data:image/png;base64,${randomUUID()
    .replaceAll('-', '')
    .repeat(SEED_IMAGE_BYTES / 32)}`;
  return JSON.stringify({
    input: { positivePrompt: 'a lighthouse at dusk, in the style of an old engraving', seedImage },
    model: 'vendor@stable-2',
    samples: 1,
    steps: 20,
    safetyLevel: 'high',
  });
}

beforeAll(async () => {
  simulator = new Worker(new URL('./support/simulator-worker.ts', import.meta.url), {
    workerData: { token: UPSTREAM_TOKEN },
  });
  const [simulatorUrl] = (await once(simulator, 'message')) as [string];
  // The defaults of server.overload, as an operator runs them; a memory store, so that the two cores go
  // to the replica and the generator.
  const configPath = await writeTempConfig(
    [
      'server: { host: 127.0.0.1, port: 0 }',
      'admin: { host: 127.0.0.1, port: 0 }',
      `upstream: { baseUrl: "${simulatorUrl}", credentials: { shared: { env: SHARED_TOKEN } } }`,
      'store: { kind: memory }',
      'tenants:',
      '  - id: load',
      '    credential: shared',
      `    keys: [{ sha256: "${key.sha256}", prefix: "${key.prefix}" }]`,
      '    policy: { mode: enforce, samples: { maximum: 4, onViolation: reject }, steps: { maximum: 30, onViolation: reject } }',
      '    limits: [{ id: requests, routes: ["*"], cost: requests, limit: 10000000, windowSeconds: 60 }]',
      '',
    ].join('\n'),
  );
  replica = await startGatewayProcess(configPath, { SHARED_TOKEN: UPSTREAM_TOKEN, LOG_LEVEL: 'info' });
  port = Number(new URL(replica.gatewayUrl).port);
  adminUrl = replica.adminUrl;
});

afterAll(async () => {
  report.write();
  replica?.signal('SIGKILL');
  await replica?.exited;
  await simulator?.terminate();
});

const answeredInTime = (outcome: Outcome) =>
  outcome.latencyMs < ANSWERED_WITHIN_MS &&
  (outcome.status === 200 ||
    (outcome.status === 503 &&
      outcome.errorCode === 'overloaded' &&
      outcome.headers['retry-after'] !== undefined));

async function ready(): Promise<boolean> {
  return (await fetch(`${adminUrl}/readyz`)).status === 200;
}

test(`offered ${FLOOD_FACTOR}× its capacity (at most ${MAX_FLOOD_RATE}/s) for ${FLOOD_MS / 1_000} s, a replica answers within a second, and serves at once after`, async () => {
  const heavy = rawPost('/v1/images/generations', headers, heavyCreate());
  expect(heavy.length).toBeGreaterThan(38_000);
  // A fresh process compiles its hot paths under the first load.
  await closedLoop(port, heavy, { concurrency: CAPACITY_CLIENTS, durationMs: WARM_UP_MS });
  await waitFor('the replica ready again after the warm-up', ready);

  // Capacity: the creates answered 200 per second by clients that each wait for their answer.
  const measured = await closedLoop(port, heavy, {
    concurrency: CAPACITY_CLIENTS,
    durationMs: CAPACITY_MS,
  });
  const served = measured.outcomes.filter((outcome) => outcome.status === 200).length;
  const capacityPerSecond = Math.round((served * 1_000) / CAPACITY_MS);
  report.add(`capacity: ${CAPACITY_CLIENTS} clients, closed loop`, measured, { capacityPerSecond });
  expect(capacityPerSecond).toBeGreaterThan(0);
  await waitFor('the replica ready again after measuring', ready);

  const floodRate = Math.min(FLOOD_FACTOR * capacityPerSecond, MAX_FLOOD_RATE);
  const floodFactor = (floodRate / capacityPerSecond).toFixed(1);
  const ordinary = rawPost(
    '/v1/images/generations',
    headers,
    JSON.stringify({ input: { positivePrompt: 'a lighthouse' }, samples: 1 }),
  );
  const run = await openLoop(port, [
    { label: 'flood', request: heavy, ratePerSecond: floodRate, startMs: 0, durationMs: FLOOD_MS },
    {
      label: 'ordinary',
      request: ordinary,
      ratePerSecond: PROBE_RATE_PER_SECOND,
      startMs: FLOOD_MS,
      durationMs: PROBE_MS,
    },
  ]);
  const flood = run.outcomes.filter((outcome) => outcome.tag === 'flood');
  const after = run.outcomes.filter((outcome) => outcome.tag === 'ordinary');
  const answeredShare = flood.filter(answeredInTime).length / flood.length;
  const late = after.filter((outcome) => outcome.sentAtMs >= FLOOD_MS + RECOVERED_AFTER_MS);
  const ordinaryLatencies = after.map(
    (outcome) =>
      `${Math.round(outcome.sentAtMs - FLOOD_MS)} ms: ${outcome.status} in ${Math.round(outcome.latencyMs)} ms`,
  );
  const generator = {
    maxLateMs: Math.round(run.generatorMaxLateMs),
    maxStallMs: Math.round(run.generatorMaxStallMs),
  };
  report.add(
    `flood: ${floodRate}/s (${floodFactor}× capacity) for ${FLOOD_MS / 1_000} s`,
    { outcomes: flood, generatorMaxStallMs: run.generatorMaxStallMs },
    { answeredWithin1sShare: answeredShare, generator, connecting: run.connecting },
  );
  report.add(
    'ordinary creates after the flood',
    { outcomes: after, generatorMaxStallMs: run.generatorMaxStallMs },
    { fromTheFloodsEnd: ordinaryLatencies },
  );
  report.note('flood', {
    capacityPerSecond,
    floodRate,
    floodFactor,
    answeredWithin1s: `${(answeredShare * 100).toFixed(1)}%`,
    generator,
    connecting: run.connecting,
    ordinaryAfterTheFlood: ordinaryLatencies,
  });

  // More than the replica serves, whatever the cap left of the factor: some of the flood was shed.
  expect(flood.some((outcome) => outcome.status === 503 && outcome.errorCode === 'overloaded')).toBe(true);
  expect(answeredShare).toBeGreaterThanOrEqual(ANSWERED_SHARE);
  expect(late.length).toBeGreaterThan(0);
  for (const outcome of late) {
    // A stall of the load generator's own loop shows in every latency it measures; it is not gengate's.
    expect([outcome.status, outcome.latencyMs < ORDINARY_WITHIN_MS + run.generatorMaxStallMs]).toEqual([
      200,
      true,
    ]);
  }
}, 120_000);
