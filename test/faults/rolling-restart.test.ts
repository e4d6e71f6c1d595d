// docs/reliability.md under load: two replicas behind nginx (a kept-alive pool, no preStop: the balancer
// still routes to a replica when its SIGTERM comes) are restarted one after the other, twice over (four
// SIGTERMs), as a Deployment rolls its pods or a node drains, while 300 creates a second flow through
// nginx. (A burst of new connections opened at the very moment of a signal can still race the listener's
// close: docs/reliability.md, "What a drain cannot save".) Each takes the upstream 20 ms:
// several are in flight at every signal, and nginx reuses its kept-alive connections to the replicas at
// a high rate, which is when a drain that closes them loses requests (a longer upstream time spreads the
// requests over more connections and hides it). No client request fails: requests that arrive on
// connections the balancer already holds are still served, every request in flight completes, each
// replica exits 0, and its successor starts on the same port once it has gone.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { freePort } from '../support/free-port.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { runLoad } from './support/load.ts';
import { startNginx, type Nginx } from './support/nginx.ts';
import { createFaultReport } from './support/report.ts';
import { imageCreate, startFleet, warmUp, type Fleet } from './support/replicas.ts';

const RATE_PER_SECOND = 300;
// Long enough for four restarts on a loaded machine; the restarts run to their end even past it.
const LOAD_MS = 14_000;
const ROUNDS = 2;
const UPSTREAM_MS = 20;
// Traffic reaches both replicas before the first signal.
const FIRST_SIGNAL_AFTER_MS = 1_000;

const report = createFaultReport('rolling-restart');
let redis: RedisServer;
let fleet: Fleet;
let nginx: Nginx;
let ports: number[];

beforeAll(async () => {
  redis = await startRedisServer();
  fleet = await startFleet(0, {
    store: `{ kind: redis, redis: { url: "${redis.url}" } }`,
    // What is measured is the drain. On a CI machine shared with other jobs a replica starting under full
    // load lags past the 200 ms default and sheds, and requests pile up past one tenant's share of the
    // upstream connections (the load is one tenant): test/overload/shed-load.test.ts and
    // test/upstream/client.test.ts cover those.
    server: 'overload: { maxEventLoopDelayMs: 0 }',
    upstreamOptions: 'maxTenantShare: 1',
  });
  ports = [await freePort(), await freePort()];
  for (const port of ports) await fleet.startReplica(port);
  nginx = await startNginx(ports);
  await warmUp(fleet);
});

afterAll(async () => {
  report.write();
  await nginx.stop();
  await fleet.stop();
  await redis.stop();
});

test('a rolling restart behind nginx fails no request', async () => {
  fleet.simulator.faults.set({ delayMs: UPSTREAM_MS, match: { method: 'POST' } });
  const restarts: { port: number; exitCode: number | null; drainMs: number }[] = [];
  const run = await runLoad({
    ratePerSecond: RATE_PER_SECOND,
    durationMs: LOAD_MS,
    next: () => imageCreate(nginx.url, fleet.keys.load),
    during: async () => {
      await new Promise((resolve) => setTimeout(resolve, FIRST_SIGNAL_AFTER_MS));
      for (let round = 0; round < ROUNDS; round++) {
        for (const port of ports) {
          const old = fleet.replicas.find(
            (replica) => replica.gatewayUrl.endsWith(`:${port}`) && replica.child.exitCode === null,
          )!;
          const signalledAt = performance.now();
          old.signal('SIGTERM');
          const exitCode = await old.exited;
          restarts.push({ port, exitCode, drainMs: Math.round(performance.now() - signalledAt) });
          // The successor takes the port as soon as it is free; the fleet keeps the exited one (stop() skips it).
          await fleet.startReplica(port);
        }
      }
    },
  });
  const { outcomes } = run;
  fleet.simulator.faults.clear();
  const finding = report.add('rolling restart behind nginx (4 SIGTERMs, steady load)', run, { restarts });
  expect(restarts.map((restart) => restart.exitCode)).toEqual([0, 0, 0, 0]);
  expect(finding.answers).toEqual({ '200': outcomes.length });
});
