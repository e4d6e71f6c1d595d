// Real Redis processes for tests: a single server, or a three-master Cluster, each on free loopback ports
// with persistence off and its own scratch directory. Whoever starts one stops it in teardown.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import {
  createRedisConnection,
  waitUntilConnected,
  type RedisConnection,
} from '../../src/store/redis/connection.ts';
import { freePort } from './free-port.ts';
import { killedOnExit } from './killed-on-exit.ts';
import { waitFor } from './wait-for.ts';

const STARTUP_TIMEOUT_MS = 10_000;

export interface RedisServer {
  url: string;
  port: number;
  /** Graceful shutdown; also closes every client() handed out. */
  stop(): Promise<void>;
  /** SIGKILL, as a crash: the port stays reserved for restart(). */
  kill(): Promise<void>;
  /** Starts again on the same port with an empty dataset, after kill(). */
  restart(): Promise<void>;
  /** SIGSTOP: the process stops answering but keeps its sockets open, as a stalled host does. */
  freeze(): void;
  /** SIGCONT after freeze(): the commands queued meanwhile run now. */
  thaw(): void;
  /** DEBUG SLEEP: Redis blocks for `seconds`, as on a long command or a fork; resolves when it answers. */
  sleep(seconds: number): Promise<void>;
  /** A plain client for inspecting and poisoning state; closed by stop(). */
  client(): Redis;
}

// A raw PING over TCP: answers only once the server accepts commands, with no client library involved.
async function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.setTimeout(500);
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => {
      socket.destroy();
      resolve(data.toString().startsWith('+PONG'));
    });
    socket.once('error', () => {
      resolve(false);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

// Over a socket of its own: the answer comes only when the sleep ends, and no client's queue waits on it.
async function debugSleep(port: number, seconds: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => socket.write(`DEBUG SLEEP ${seconds}\r\n`));
    socket.once('data', (data) => {
      socket.destroy();
      if (data.toString().startsWith('+OK')) resolve();
      else reject(new Error(`DEBUG SLEEP answered ${data.toString().trim()}`));
    });
    socket.once('error', reject);
  });
}

async function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise((resolve) => child.once('exit', resolve));
}

// Attempts at a first start: the port a test picked can be taken before redis-server binds it (or, for a
// Cluster node, its bus port, the port + 10,000), and then redis-server exits at once.
const START_ATTEMPTS = 5;
const CLUSTER_BUS_PORT_OFFSET = 10_000;
const HIGHEST_PORT = 65_535;

class ExitedAtStart extends Error {}

/** A free port, with its Cluster bus port in range too when `cluster`. */
async function serverPort(cluster: boolean): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (!cluster || port + CLUSTER_BUS_PORT_OFFSET <= HIGHEST_PORT) return port;
  }
}

export async function startRedisServer(extraArgs: string[] = []): Promise<RedisServer> {
  const cluster = extraArgs.includes('--cluster-enabled');
  let port = await serverPort(cluster);
  const dir = await mkdtemp(join(tmpdir(), 'gengate-redis-'));
  const clients: Redis[] = [];
  let child: ChildProcess;

  async function launch(): Promise<void> {
    const args = [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
      // For sleep(): DEBUG from loopback clients only.
      '--enable-debug-command',
      'local',
    ];
    const started = killedOnExit(spawn('redis-server', [...args, ...extraArgs], { stdio: 'ignore' }));
    child = started;
    await waitFor(`redis-server on ${port}`, () => {
      if (started.exitCode !== null) throw new ExitedAtStart(`redis-server on ${port} exited at start`);
      return answersPing(port);
    });
  }

  for (let attempt = 1; ; attempt += 1) {
    try {
      await launch();
      break;
    } catch (error) {
      if (attempt === START_ATTEMPTS || !(error instanceof ExitedAtStart)) throw error;
      port = await serverPort(cluster);
    }
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async stop() {
      for (const client of clients) client.disconnect();
      // A frozen server would not act on SIGTERM until continued.
      child.kill('SIGCONT');
      child.kill('SIGTERM');
      await exited(child);
      await rm(dir, { recursive: true, force: true });
    },
    async kill() {
      child.kill('SIGKILL');
      await exited(child);
    },
    restart: launch,
    freeze() {
      child.kill('SIGSTOP');
    },
    thaw() {
      child.kill('SIGCONT');
    },
    sleep: (seconds) => debugSleep(port, seconds),
    client() {
      const client = new Redis(port, '127.0.0.1', { lazyConnect: false, maxRetriesPerRequest: 1 });
      clients.push(client);
      return client;
    },
  };
}

/** A connection to `redis` as the gateway makes it (its key prefix), connected before it is returned. */
export async function connectAsGateway(redis: RedisServer): Promise<RedisConnection> {
  const connection = createRedisConnection({
    url: redis.url,
    keyPrefix: 'gengate:',
    commandTimeoutMs: 2_000,
  });
  await waitUntilConnected(connection, STARTUP_TIMEOUT_MS);
  return connection;
}

export interface RedisCluster {
  nodes: { host: string; port: number }[];
  servers: RedisServer[];
  stop(): Promise<void>;
}

async function waitForClusterStateOk(server: RedisServer): Promise<void> {
  const client = server.client();
  await waitFor('cluster_state:ok', async () => {
    const info = await client.call('CLUSTER', 'INFO');
    return typeof info === 'string' && info.includes('cluster_state:ok');
  });
}

const CLUSTER_SLOTS = 16_384;

/**
 * Three masters, no replicas, every slot assigned; resolves once every node reports cluster_state:ok.
 * The cluster is made with plain commands, as `redis-cli --cluster create` makes it, so the tests need no
 * redis-cli: each node takes a third of the slots, then the first node meets the others.
 */
export async function startRedisCluster(): Promise<RedisCluster> {
  const servers = await Promise.all(
    [0, 1, 2].map(() => startRedisServer(['--cluster-enabled', 'yes', '--cluster-node-timeout', '2000'])),
  );
  const stop = async () => {
    await Promise.all(servers.map((server) => server.stop()));
  };
  try {
    const slotsPerNode = Math.ceil(CLUSTER_SLOTS / servers.length);
    for (const [index, server] of servers.entries()) {
      const first = index * slotsPerNode;
      const last = Math.min(first + slotsPerNode, CLUSTER_SLOTS) - 1;
      await server.client().call('CLUSTER', 'ADDSLOTSRANGE', first, last);
    }
    const introducer = servers[0]!.client();
    for (const other of servers.slice(1)) await introducer.call('CLUSTER', 'MEET', '127.0.0.1', other.port);
    for (const server of servers) await waitForClusterStateOk(server);
  } catch (error) {
    await stop();
    throw error;
  }
  return { nodes: servers.map((server) => ({ host: '127.0.0.1', port: server.port })), servers, stop };
}

/** The commands a client sent to `redis` while `during` ran (Redis MONITOR; scripts' own calls left out). */
export async function clientCommandsDuring(
  redis: RedisServer,
  during: () => Promise<void>,
): Promise<string[][]> {
  const monitorClient = redis.client();
  const monitor = await monitorClient.monitor();
  const commands: string[][] = [];
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (source !== 'lua') commands.push(args);
  });
  try {
    await during();
    await monitorClient.echo('end');
    await waitFor('the monitor to see the end marker', () => commands.some(([name]) => name === 'echo'));
    return commands.filter(([name]) => name !== 'echo');
  } finally {
    monitor.disconnect();
  }
}
