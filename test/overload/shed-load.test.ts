// docs/reliability.md#overload: past its load thresholds a replica answers new requests with a fast 503 overloaded
// and Retry-After, readiness and gengate_overloaded report it, nothing already admitted is dropped, and
// it serves again by itself as soon as the load is gone.
import pino from 'pino';
import { afterEach, expect, test } from 'vitest';
import { buildAdminApp } from '../../src/admin/app.ts';
import { createReadiness } from '../../src/admin/readiness.ts';
import { isOverloaded } from '../../src/overload/shed-load.ts';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.ts';
import { waitFor } from '../support/wait-for.ts';

let harness: GatewayHarness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

async function create(gateway: GatewayHarness) {
  const response = await fetch(`${gateway.url}/v1/images/generations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${gateway.keys.alpha}`, 'content-type': 'application/json' },
    body: '{"samples":1}',
  });
  const body: unknown = await response.json();
  return { response, body };
}

const OVERLOADED_BODY = {
  status: 503,
  error: {
    code: 'overloaded',
    type: 'unavailable_error',
    message: 'this gateway replica is overloaded; retry shortly',
  },
};

/** The admin server as src/main.ts wires it to the gateway. */
function adminOf(gateway: GatewayHarness) {
  const readiness = createReadiness({ overloaded: () => isOverloaded(gateway.app) });
  readiness.markReady();
  return buildAdminApp({ logger: pino({ level: 'silent' }), metrics: gateway.metrics, readiness });
}

const series = (metrics: string, name: string) => metrics.split('\n').filter((line) => line.startsWith(name));

test('past the heap threshold: 503 overloaded with Retry-After, readiness down, metrics', async () => {
  harness = await startGatewayHarness({
    overloadYaml: '{ maxHeapUsedRatio: 0.000001, retryAfterSeconds: 3, maxQueueWaitMs: 0 }',
  });
  const admin = adminOf(harness);
  try {
    // Every shed reason starts at 0.
    expect(series((await admin.inject('/metrics')).body, 'gengate_load_shed_total')).toEqual([
      'gengate_load_shed_total{reason="event_loop_delay"} 0',
      'gengate_load_shed_total{reason="heap"} 0',
      'gengate_load_shed_total{reason="upstream_queue"} 0',
      'gengate_load_shed_total{reason="rss"} 0',
      'gengate_load_shed_total{reason="queue_wait"} 0',
      'gengate_load_shed_total{reason="bytes_in_flight"} 0',
    ]);
    const gateway = harness;
    // Before the first load sample (250 ms) nothing is known to be over the threshold.
    await waitFor('shedding', async () => (await create(gateway)).response.status === 503);
    const forwarded = harness.simulator.received.length;
    const { response, body } = await create(harness);
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('3');
    // The body is never read: the connection ends with the answer.
    expect(response.headers.get('connection')).toBe('close');
    expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(body).toEqual(OVERLOADED_BODY);
    const ready = await admin.inject('/readyz');
    expect([ready.statusCode, ready.json()]).toEqual([503, { status: 'overloaded' }]);
    // /metrics is rendered at most once a second (src/admin/app.ts).
    let metrics = '';
    await waitFor('the shedding in /metrics', async () => {
      metrics = (await admin.inject('/metrics')).body;
      return series(metrics, 'gengate_overloaded ')[0] === 'gengate_overloaded 1';
    });
    expect(series(metrics, 'gengate_overloaded ')).toEqual(['gengate_overloaded 1']);
    expect(series(metrics, 'gengate_load_shed_total{reason="heap"}')).not.toEqual([
      'gengate_load_shed_total{reason="heap"} 0',
    ]);
    // Shed before anything else: nothing more reached the upstream.
    expect(harness.simulator.received).toHaveLength(forwarded);
  } finally {
    await admin.close();
  }
});

test('past the RSS bound (the container limit by default): 503 overloaded, readiness down', async () => {
  // One byte: any process is past it, as one holding unread answers far outside its heap would be.
  harness = await startGatewayHarness({ overloadYaml: '{ maxRssBytes: 1, maxQueueWaitMs: 0 }' });
  const gateway = harness;
  const admin = adminOf(gateway);
  try {
    await waitFor('shedding', async () => (await create(gateway)).response.status === 503);
    expect((await create(gateway)).body).toEqual(OVERLOADED_BODY);
    expect((await admin.inject('/readyz')).statusCode).toBe(503);
    const metrics = (await admin.inject('/metrics')).body;
    expect(series(metrics, 'gengate_load_shed_total{reason="rss"}')).not.toEqual([
      'gengate_load_shed_total{reason="rss"} 0',
    ]);
  } finally {
    await admin.close();
  }
});

/** Keeps the event loop busy in 100 ms slices, as a saturated process is, for `durationMs`. */
async function saturateEventLoop(durationMs: number): Promise<void> {
  const end = performance.now() + durationMs;
  while (performance.now() < end) {
    const sliceEnd = performance.now() + 100;
    while (performance.now() < sliceEnd) {
      // Busy: this turn of the loop takes the whole slice.
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
}

test('event-loop delay: new requests shed, the one in flight completes, and service resumes', async () => {
  harness = await startGatewayHarness({ overloadYaml: '{ maxEventLoopDelayMs: 50, maxQueueWaitMs: 0 }' });
  const gateway = harness;
  const admin = adminOf(gateway);
  try {
    expect((await create(gateway)).response.status).toBe(200);
    gateway.simulator.faults.set({ delayMs: 1_000, times: 1 });
    const inFlight = create(gateway);
    await waitFor('the request at the upstream', () => gateway.simulator.received.length === 2);

    const saturated = saturateEventLoop(3_000);
    let shed: Awaited<ReturnType<typeof create>> | undefined;
    await waitFor('shedding', async () => {
      const answer = await create(gateway);
      if (answer.response.status === 503) shed = answer;
      return shed !== undefined;
    });
    expect(shed?.body).toEqual(OVERLOADED_BODY);
    expect(shed?.response.headers.get('retry-after')).toBe('1');
    await saturated;

    const admitted = await inFlight;
    expect(admitted.response.status).toBe(200);
    await waitFor('service to resume', async () => (await create(gateway)).response.status === 200);
    expect((await admin.inject('/readyz')).statusCode).toBe(200);
    const metrics = (await admin.inject('/metrics')).body;
    expect(series(metrics, 'gengate_overloaded ')).toEqual(['gengate_overloaded 0']);
    expect(series(metrics, 'gengate_load_shed_total{reason="event_loop_delay"}')).not.toEqual([
      'gengate_load_shed_total{reason="event_loop_delay"} 0',
    ]);
  } finally {
    await admin.close();
  }
}, 20_000);
