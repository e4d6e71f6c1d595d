// The ways a gengate process ends (docs/deploy.md#running-the-process-without-kubernetes), each against the real process: a second signal
// during the drain exits 1 at once; a drain past server.drainTimeoutMs cuts what is in flight, counts it
// and exits 1; an uncaught exception or an unhandled rejection is logged, drains, and exits 1. Every way
// out leaves a log line saying which it was. A close that hangs past the deadline's margin:
// test/server/lifecycle.test.ts.
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { SimulatorServer } from '../../src/simulator/server.ts';
import {
  oneTenantConfig,
  startGatewayProcess,
  startSharedTokenSimulator,
  writeTempConfig,
  type GatewayProcess,
  type OneTenantConfig,
} from '../support/gateway-process.ts';
import { failureOnSignal, type TestFailure } from '../support/process-failure.ts';
import { CANARY_UPSTREAM_TOKENS, canaryTenantKey } from '../support/secret-canary.ts';
import { waitFor } from '../support/wait-for.ts';

const TOKEN = CANARY_UPSTREAM_TOKENS.shared;
// Far longer than any test waits: a request held this long at the upstream is in flight throughout.
const HELD_AT_UPSTREAM_MS = 20_000;
let simulator: SimulatorServer;
beforeAll(async () => {
  simulator = await startSharedTokenSimulator({ queuedMs: 0, processingMs: 0 });
});
afterAll(async () => {
  await simulator.close();
});

async function startGateway(
  key: ReturnType<typeof canaryTenantKey>,
  config: Partial<OneTenantConfig> = {},
  preload: { nodeArgs: string[]; env: Record<string, string> } = { nodeArgs: [], env: {} },
): Promise<GatewayProcess> {
  const path = await writeTempConfig(oneTenantConfig({ upstreamUrl: simulator.url, keys: [key], ...config }));
  return startGatewayProcess(path, { SHARED_TOKEN: TOKEN, ...preload.env }, preload.nodeArgs);
}

/** A create sent through `gateway`; its answer, or the transport error that ended it. */
function create(gateway: GatewayProcess, key: ReturnType<typeof canaryTenantKey>): Promise<Response | Error> {
  return fetch(`${gateway.gatewayUrl}/v1/images/generations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
    body: '{}',
  }).catch((error: unknown) => error as Error);
}

const logged = (gateway: GatewayProcess, msg: string) => gateway.lines.filter((line) => line.msg === msg);

/**
 * Whether the create reached the upstream since `received` requests had. Not a count: the gateway's
 * start-up check of its credential (a GET) may land before or after the create (regression: waiting for
 * exactly one more request missed both when they arrived between two looks).
 */
const createArrived = (received: number) =>
  simulator.received.slice(received).some((request) => request.method === 'POST');

test('a second signal during the drain exits 1 at once, logged', async () => {
  const key = canaryTenantKey();
  const gateway = await startGateway(key);
  simulator.faults.set({ delayMs: HELD_AT_UPSTREAM_MS, times: 1, match: { method: 'POST' } });
  const received = simulator.received.length;
  const inFlight = create(gateway, key);
  await waitFor('the request at the upstream', () => createArrived(received));
  gateway.signal('SIGTERM');
  await waitFor('the draining log line', () => logged(gateway, 'draining').length === 1);
  gateway.signal('SIGINT');
  expect(await gateway.exited).toBe(1);
  expect(logged(gateway, 'second signal during the drain; exiting at once')).toMatchObject([
    { level: 50, signal: 'SIGINT' },
  ]);
  expect(await inFlight).toBeInstanceOf(Error);
  simulator.faults.clear();
});

test('a drain past server.drainTimeoutMs cuts the request in flight, counts it and exits 1', async () => {
  const key = canaryTenantKey();
  const gateway = await startGateway(key, { server: 'drainTimeoutMs: 300' });
  simulator.faults.set({ delayMs: HELD_AT_UPSTREAM_MS, times: 1, match: { method: 'POST' } });
  const received = simulator.received.length;
  const inFlight = create(gateway, key);
  await waitFor('the request at the upstream', () => createArrived(received));
  gateway.signal('SIGTERM');
  expect(await gateway.exited).toBe(1);
  expect(logged(gateway, 'drain deadline passed; requests still in flight cut')).toMatchObject([
    { level: 50, drainTimeoutMs: 300, aborted: 1 },
  ]);
  expect(logged(gateway, 'stopped')).toMatchObject([{ reason: 'SIGTERM', exitCode: 1 }]);
  expect(await inFlight).toBeInstanceOf(Error);
  simulator.faults.clear();
});

for (const [failure, message] of [
  ['uncaught-exception', 'uncaught exception; draining, then exiting with 1'],
  ['unhandled-rejection', 'unhandled rejection; draining, then exiting with 1'],
] as const satisfies readonly (readonly [TestFailure, string])[]) {
  test(`an ${failure.replace('-', ' ')} is logged, drains the request in flight, and exits 1`, async () => {
    const key = canaryTenantKey();
    const gateway = await startGateway(key, {}, failureOnSignal(failure));
    simulator.faults.set({ delayMs: 1_000, times: 1, match: { method: 'POST' } });
    const received = simulator.received.length;
    const inFlight = create(gateway, key);
    await waitFor('the request at the upstream', () => createArrived(received));
    gateway.signal('SIGUSR2');
    await waitFor('the failure logged', () => logged(gateway, message).length === 1);
    expect(logged(gateway, message)[0]).toMatchObject({ level: 60, err: { type: 'Error' } });
    const answer = await inFlight;
    expect(answer).toBeInstanceOf(Response);
    expect((answer as Response).status).toBe(200);
    expect(await gateway.exited).toBe(1);
    expect(logged(gateway, 'stopped')).toMatchObject([{ exitCode: 1 }]);
    simulator.faults.clear();
  });
}
