// docs/reliability.md#upstream-faults under load: each upstream fault, played while two replicas take 200 creates a second,
// gets its documented answer (504 upstream_timeout, 502 upstream_unavailable, the upstream's own error
// body, 429 upstream_rate_limited with its Retry-After) and nothing else; afterwards no request is left in
// flight and the replicas' file descriptors and memory are back where they were.
import type { Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { DEFAULT_UPSTREAM_TIMEOUT_MS } from '../../src/config/schema.ts';
import type { Fault } from '../../src/simulator/faults.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { waitFor } from '../support/wait-for.ts';
import {
  STORM_RETRY_AFTER_SECONDS,
  startFaultyUpstream,
  type FaultyUpstream,
} from './support/faulty-upstream.ts';
import { runLoad } from './support/load.ts';
import { createFaultReport } from './support/report.ts';
import { imageCreate, metricValue, startFleet, warmUp, type Fleet } from './support/replicas.ts';

const RATE_PER_SECOND = 200;
const LOAD_MS = 1_500;
const UPSTREAM_TIMEOUT_MS = 500;
// Longer than the gateway waits, so the gateway's bound is what ends the exchange.
const SLOW_UPSTREAM_MS = 3 * UPSTREAM_TIMEOUT_MS;
// What two cores shared with the load generator and the upstream add to a bounded wait.
const MARGIN_MS = 400;
// A few requests only, one at a time: each moves the whole cap (64 MiB by default, src/upstream/client.ts)
// over loopback, which must fit in the upstream timeout.
const OVERSIZED_REQUESTS = 4;
// The cap on an upstream answer: the oversized ones are cut at it, far below the bytes a replica holds for
// exchanges at once (server.maxBytesInFlight, 96 MiB), which cut-off answers that overlap on a slow machine
// would otherwise reach first (503 overloaded, tested in test/faults/memory.test.ts).
const MAX_RESPONSE_BYTES = 8 * 1024 * 1024;
const OVERSIZED_PER_SECOND = 2;
// Descriptors beyond the baseline and the upstream's idle connections: a replica's own files and timers.
const SPARE_DESCRIPTORS = 16;
// Heap used may differ by garbage not yet collected, never by a retained response (the cap is 64 MiB).
const HEAP_TOLERANCE_BYTES = 32 * 1024 * 1024;
const KEPT_HEADERS = ['retry-after', 'content-type'];

const report = createFaultReport('upstream');
let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedisServer();
});
afterAll(async () => {
  report.write();
  await redis.stop();
});

interface Resources {
  replicas: { descriptors: number; heapUsedBytes: number }[];
  /** Connections the upstream holds from the replicas: kept alive by the replicas' pools while idle. */
  upstreamConnections: number;
}

async function resourcesOf(fleet: Fleet, upstreamConnections: () => Promise<number>): Promise<Resources> {
  return {
    replicas: await Promise.all(
      fleet.replicas.map(async (replica) => ({
        descriptors: await metricValue(replica, 'process_open_fds'),
        heapUsedBytes: await metricValue(replica, 'nodejs_heap_size_used_bytes'),
      })),
    ),
    upstreamConnections: await upstreamConnections(),
  };
}

function connectionsOf(server: Server): () => Promise<number> {
  return () =>
    new Promise((resolve, reject) => {
      server.getConnections((error, count) => {
        if (error === null) resolve(count);
        else reject(error);
      });
    });
}

async function loadThrough(
  fleet: Fleet,
  { requests, ratePerSecond } = {
    requests: (RATE_PER_SECOND * LOAD_MS) / 1_000,
    ratePerSecond: RATE_PER_SECOND,
  },
) {
  const urls = fleet.replicas.map((replica) => replica.gatewayUrl);
  return runLoad({
    ratePerSecond,
    durationMs: (requests * 1_000) / ratePerSecond,
    next: (index) => imageCreate(urls[index % urls.length]!, fleet.keys.load),
    keepHeaders: KEPT_HEADERS,
  });
}

/**
 * Starts a fleet on the simulator, or on `upstream` when given; returns it with the way to count the
 * upstream's connections and the resources it holds once warm.
 */
async function startWarmFleet(options: { upstream?: FaultyUpstream; upstreamTimeoutMs: number }) {
  const fleet = await startFleet(2, {
    ...(options.upstream === undefined ? {} : { upstreamUrl: options.upstream.url }),
    store: `{ kind: redis, redis: { url: "${redis.url}" } }`,
    upstreamOptions: `timeoutMs: ${options.upstreamTimeoutMs}, maxResponseBytes: ${MAX_RESPONSE_BYTES}`,
  });
  await warmUp(fleet);
  const upstreamConnections = connectionsOf(options.upstream?.server ?? fleet.simulator.app.server);
  return { fleet, upstreamConnections, baseline: await resourcesOf(fleet, upstreamConnections) };
}

/** Nothing in flight, descriptors back near the baseline, heap not holding what the faults sent. */
async function expectResourcesFlat(
  fleet: Fleet,
  baseline: Resources,
  upstreamConnections: () => Promise<number>,
  scenario: string,
): Promise<void> {
  await waitFor('no request in flight', async () =>
    (
      await Promise.all(fleet.replicas.map((replica) => metricValue(replica, 'gengate_inflight_requests')))
    ).every((value) => value === 0),
  );
  // Every descriptor the replicas hold beyond the baseline is accounted for: an idle upstream connection
  // their pools keep alive (the upstream counts them), or one of a few spares. A hung exchange or a socket
  // nobody closed would be neither.
  const descriptors = (resources: Resources) =>
    resources.replicas.reduce((sum, replica) => sum + replica.descriptors, 0);
  const after = await resourcesOf(fleet, upstreamConnections);
  const allowed =
    descriptors(baseline) + after.upstreamConnections - baseline.upstreamConnections + SPARE_DESCRIPTORS;
  report.note(scenario, { baseline, after, allowedDescriptors: allowed });
  expect(descriptors(after)).toBeLessThanOrEqual(allowed);
  for (const [index, each] of after.replicas.entries()) {
    expect(each.heapUsedBytes).toBeLessThan(baseline.replicas[index]!.heapUsedBytes + HEAP_TOLERANCE_BYTES);
  }
}

describe('faults the simulator plays', () => {
  let fleet: Fleet;
  let baseline: Resources;
  let upstreamConnections: () => Promise<number>;
  beforeAll(async () => {
    ({ fleet, baseline, upstreamConnections } = await startWarmFleet({
      upstreamTimeoutMs: UPSTREAM_TIMEOUT_MS,
    }));
  });
  afterAll(async () => {
    await fleet.stop();
  });

  const cases: { name: string; fault: Fault; answer: string; boundMs?: number }[] = [
    {
      name: 'slow headers',
      fault: { delayMs: SLOW_UPSTREAM_MS },
      answer: '504 upstream_timeout',
      boundMs: UPSTREAM_TIMEOUT_MS + MARGIN_MS,
    },
    {
      name: 'slow body',
      fault: { stallBody: true },
      answer: '504 upstream_timeout',
      boundMs: UPSTREAM_TIMEOUT_MS + MARGIN_MS,
    },
    {
      name: 'connection reset before an answer',
      fault: { dropConnection: true },
      answer: '502 upstream_unavailable',
    },
    { name: 'upstream 500', fault: { status: 500 }, answer: '500 internal_error' },
    { name: 'upstream 503', fault: { status: 503 }, answer: '503 service_unavailable' },
  ];

  test.each(cases)('$name: $answer', async ({ name, fault, answer, boundMs }) => {
    fleet.simulator.faults.set({ ...fault, match: { method: 'POST' } });
    let upstreamBody: string | undefined;
    if (fault.status !== undefined) {
      // What the upstream itself answers, to compare the passed-through bodies with byte for byte.
      const direct = await fetch(`${fleet.simulator.url}/v1/images/generations`, {
        method: 'POST',
        body: '{}',
      });
      upstreamBody = await direct.text();
    }
    const run = await loadThrough(fleet);
    const { outcomes } = run;
    fleet.simulator.faults.clear();
    const finding = report.add(name, run);
    expect(finding.answers).toEqual({ [answer]: outcomes.length });
    if (boundMs !== undefined) expect(finding.maxMs).toBeLessThan(boundMs + finding.generatorMaxStallMs);
    if (upstreamBody !== undefined) {
      expect(new Set(outcomes.map((outcome) => outcome.body))).toEqual(new Set([upstreamBody]));
    }
  });

  test('afterwards: nothing in flight, descriptors and heap back near where they were', async () => {
    await expectResourcesFlat(fleet, baseline, upstreamConnections, 'simulator faults: resources');
  });
});

describe('faults of a purpose-built upstream', () => {
  let upstream: FaultyUpstream;
  let fleet: Fleet;
  let baseline: Resources;
  let upstreamConnections: () => Promise<number>;
  beforeAll(async () => {
    upstream = await startFaultyUpstream();
    // The default timeout: here the faults are immediate, and a body of the cap's size takes a while.
    ({ fleet, baseline, upstreamConnections } = await startWarmFleet({
      upstream,
      upstreamTimeoutMs: DEFAULT_UPSTREAM_TIMEOUT_MS,
    }));
  });
  afterAll(async () => {
    await fleet.stop();
    await upstream.close();
  });

  test('reset in the middle of the body: 502 upstream_unavailable', async () => {
    upstream.set('reset mid-body');
    const run = await loadThrough(fleet);
    const { outcomes } = run;
    upstream.set(undefined);
    expect(report.add('connection reset mid-body', run).answers).toEqual({
      '502 upstream_unavailable': outcomes.length,
    });
  });

  test('connection refused: 502 upstream_unavailable', async () => {
    await upstream.refuse();
    const run = await loadThrough(fleet);
    const { outcomes } = run;
    await upstream.listen();
    expect(report.add('connection refused', run).answers).toEqual({
      '502 upstream_unavailable': outcomes.length,
    });
  });

  test('a storm of 429s: 429 upstream_rate_limited with the upstream Retry-After', async () => {
    upstream.set('rate limited');
    const run = await loadThrough(fleet);
    const { outcomes } = run;
    upstream.set(undefined);
    expect(report.add('upstream 429 storm', run).answers).toEqual({
      '429 upstream_rate_limited': outcomes.length,
    });
    expect(new Set(outcomes.map((outcome) => outcome.headers['retry-after']))).toEqual(
      new Set([String(STORM_RETRY_AFTER_SECONDS)]),
    );
  });

  test('a response larger than the cap: 502 upstream_unavailable', async () => {
    upstream.set('oversized');
    const run = await loadThrough(fleet, {
      requests: OVERSIZED_REQUESTS,
      ratePerSecond: OVERSIZED_PER_SECOND,
    });
    const { outcomes } = run;
    upstream.set(undefined);
    expect(report.add('response larger than the cap', run).answers).toEqual({
      '502 upstream_unavailable': outcomes.length,
    });
  });

  test('afterwards: nothing in flight, descriptors and heap back near where they were', async () => {
    await expectResourcesFlat(
      fleet,
      baseline,
      upstreamConnections,
      'purpose-built upstream faults: resources',
    );
  });
});
