// Bounded by construction (docs/deploy.md#memory-and-connection-bounds): a gateway out of file descriptors (a low limit flooded
// with idle sockets that send nothing) survives, logs and counts it, and serves again once they go;
// beyond server.maxConnections new connections are closed at once, counted, and the process serves the
// connections it has. Against the real process (src/main.ts), its descriptor limit lowered with prlimit.
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { SimulatorServer } from '../../src/simulator/server.ts';
import {
  oneTenantConfig,
  startGatewayProcess,
  startSharedTokenSimulator,
  writeTempConfig,
  type GatewayProcess,
} from '../support/gateway-process.ts';
import { CANARY_UPSTREAM_TOKENS, canaryTenantKey } from '../support/secret-canary.ts';
import { waitFor } from '../support/wait-for.ts';

const TOKEN = CANARY_UPSTREAM_TOKENS.shared;
let simulator: SimulatorServer;
beforeAll(async () => {
  simulator = await startSharedTokenSimulator({ queuedMs: 0, processingMs: 0 });
});
afterAll(async () => {
  await simulator.close();
});

async function startGateway(server?: string): Promise<GatewayProcess> {
  const key = canaryTenantKey();
  const path = await writeTempConfig(
    oneTenantConfig({ upstreamUrl: simulator.url, keys: [key], ...(server === undefined ? {} : { server }) }),
  );
  return startGatewayProcess(path, { SHARED_TOKEN: TOKEN });
}

/** `count` connections that send nothing; each one's end is noted. */
async function idleSockets(url: string, count: number): Promise<{ sockets: Socket[]; closed: Set<Socket> }> {
  const { hostname, port } = new URL(url);
  const sockets: Socket[] = [];
  const closed = new Set<Socket>();
  for (let index = 0; index < count; index++) {
    const socket = connect(Number(port), hostname);
    socket.on('error', () => {});
    socket.once('close', () => closed.add(socket));
    sockets.push(socket);
  }
  await Promise.all(sockets.map((socket) => Promise.race([once(socket, 'connect'), once(socket, 'close')])));
  return { sockets, closed };
}

async function metricValue(gateway: GatewayProcess, series: string): Promise<number> {
  const text = await (await fetch(`${gateway.adminUrl}/metrics`)).text();
  const line = text.split('\n').find((each) => each.startsWith(`${series} `));
  return Number(line?.split(' ')[1]);
}

const keysStatus = async (gateway: GatewayProcess) =>
  fetch(`${gateway.gatewayUrl}/v1/account/keys`).then(
    (answer) => answer.status,
    () => 0,
  );

test('out of file descriptors: the process survives, logs and counts it, and serves again', async () => {
  const gateway = await startGateway();
  try {
    execFileSync('prlimit', ['--pid', String(gateway.child.pid), '--nofile=256:256']);
    const { sockets } = await idleSockets(gateway.gatewayUrl, 400);
    await waitFor('the log line', () =>
      gateway.lines.some((line) => line.msg === 'out of file descriptors; new connections closed'),
    );
    // Several load samples (each reads the RSS, which needs a descriptor) pass while none is free.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(gateway.child.exitCode).toBeNull();
    for (const socket of sockets) socket.destroy();
    await waitFor('the gateway serving again', async () => (await keysStatus(gateway)) === 401);
    expect(await metricValue(gateway, 'gengate_file_descriptors_exhausted_total')).toBeGreaterThan(0);
    expect(
      gateway.lines.find((line) => line.msg === 'out of file descriptors; new connections closed'),
    ).toMatchObject({ level: 40, server: 'gateway' });
  } finally {
    gateway.signal('SIGTERM');
    expect(await gateway.exited).toBe(0);
  }
});

test('beyond server.maxConnections new connections are closed at once, counted, and the rest served', async () => {
  const gateway = await startGateway('maxConnections: 20');
  try {
    const held = await idleSockets(gateway.gatewayUrl, 20);
    await waitFor('the gateway to hold 20', async () => {
      const extra = await idleSockets(gateway.gatewayUrl, 1);
      await waitFor('the extra one closed', () => extra.closed.size === 1);
      return (await metricValue(gateway, 'gengate_connections_refused_total{server="gateway"}')) >= 1;
    });
    expect(held.closed.size).toBe(0);
    for (const socket of held.sockets) socket.destroy();
    await waitFor('the gateway serving again', async () => (await keysStatus(gateway)) === 401);
    // Log lines are written in batches (docs/operations.md, "Logs" under "Metrics and logs"): wait for the line, not for luck.
    await waitFor('the warning logged', () =>
      gateway.lines.some((line) => line.msg === 'connection limit reached; new connections closed'),
    );
    expect(
      gateway.lines.find((line) => line.msg === 'connection limit reached; new connections closed'),
    ).toMatchObject({ level: 40, server: 'gateway', maxConnections: 20 });
  } finally {
    gateway.signal('SIGTERM');
    expect(await gateway.exited).toBe(0);
  }
});
