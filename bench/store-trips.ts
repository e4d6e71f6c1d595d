// How many times gengate goes to Redis per request. Redis MONITOR sees every command with its source: a
// client address for a network round trip, "lua" for a command a script ran inside Redis. Counting both
// around a known number of requests separates round trips from the work scripts do. Background work
// (the usage meter's one-second flush) shows up as its own commands.
import { connect, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { SUBMISSION_BODY, SUBMISSION_RESPONSE } from './request-body.ts';

const CONCURRENCY = 8;
const SCRIPT_SOURCE = 'lua';
// Sent once the requests are answered: MONITOR delivers in order, so seeing it means nothing is missing.
const END_MARKER = 'gengate-bench-end-of-requests';
const MONITOR_DRAIN_TIMEOUT_MS = 5_000;
// MONITOR starts once the gateway has finished the previous step's backlog, so that what it counts is the
// creates' commands: Redis has processed at most a handful of commands (the usage flush, the tracker's
// polls, this check) for a while.
const QUIET_COMMANDS = 5;
const QUIET_CHECK_MS = 200;
// The throughput rounds leave thousands of jobs to follow to their end and their webhooks to send (twice
// over with --against, two builds on one Redis): that backlog takes tens of seconds to clear.
const QUIET_TIMEOUT_MS = 90_000;
const COMMANDS_PROCESSED_LINE = /^total_commands_processed:(\d+)/m;
// One line of MONITOR's output: `+<time> [<db> <source>] "<command>" "<argument>" ...`, the source a client
// address or "lua". Only the command and the first argument (the end marker's) are read.
const MONITOR_LINE = /^\+\S+ \[\d+ ([^\]]+)\] "((?:[^"\\]|\\.)*)"(?: "((?:[^"\\]|\\.)*)")?/;

async function commandsProcessed(client: Redis): Promise<number> {
  return Number(COMMANDS_PROCESSED_LINE.exec(await client.info('stats'))?.[1] ?? Number.NaN);
}

async function untilRedisIsQuiet(client: Redis): Promise<void> {
  const deadline = performance.now() + QUIET_TIMEOUT_MS;
  let before = await commandsProcessed(client);
  while (performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, QUIET_CHECK_MS));
    const now = await commandsProcessed(client);
    if (now - before <= QUIET_COMMANDS) return;
    before = now;
  }
  throw new Error(`Redis did not become quiet within ${QUIET_TIMEOUT_MS} ms`);
}

export type MonitorListener = (command: string, firstArgument: string | undefined, source: string) => void;

/**
 * A connection in MONITOR mode, read line by line; answers once MONITOR has said OK, from which on Redis
 * reports every command. Not ioredis's `monitor()`: ioredis switches a connection to monitor mode only
 * once MONITOR's OK has been handled, so a command that Redis reports in the same read as that OK arrives
 * as a reply nobody waits for, and the client throws ("Command queue state error"). With the tracker
 * following jobs, Redis is never quiet enough to rule that out.
 */
export function startMonitor(port: number, listener: MonitorListener): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let pending = '';
    let confirmed = false;
    socket.once('error', reject);
    socket.setEncoding('utf8').on('data', (chunk: string) => {
      pending += chunk;
      for (let end = pending.indexOf('\r\n'); end !== -1; end = pending.indexOf('\r\n')) {
        const line = pending.slice(0, end);
        pending = pending.slice(end + 2);
        if (confirmed) {
          const fields = MONITOR_LINE.exec(line);
          if (fields !== null) listener(fields[2]!, fields[3], fields[1]!);
        } else if (line === '+OK') {
          confirmed = true;
          socket.off('error', reject);
          resolve(socket);
        } else {
          socket.destroy();
          reject(new Error(`MONITOR answered ${line}`));
        }
      }
    });
    socket.write('MONITOR\r\n');
  });
}

export interface StoreTrips {
  requests: number;
  /** Commands sent over the network, by name. */
  roundTrips: Record<string, number>;
  /** Commands run inside scripts, by name. */
  inScripts: Record<string, number>;
  roundTripsPerRequest: number;
}

async function sendSubmissions(url: string, authorization: string, count: number): Promise<void> {
  let sent = 0;
  const worker = async () => {
    while (sent < count) {
      sent++;
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization },
        body: SUBMISSION_BODY,
      });
      const body = await response.text();
      if (response.status !== 200 || body !== SUBMISSION_RESPONSE) {
        throw new Error(`gengate answered ${response.status}: ${body}`);
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

function increment(counts: Record<string, number>, name: string): void {
  counts[name] = (counts[name] ?? 0) + 1;
}

export async function countStoreTrips(options: {
  redisPort: number;
  url: string;
  authorization: string;
  requests: number;
}): Promise<StoreTrips> {
  const client = new Redis({ port: options.redisPort, host: '127.0.0.1', maxRetriesPerRequest: 0 });
  let monitor: Socket | undefined;
  try {
    await untilRedisIsQuiet(client);
    const roundTrips: Record<string, number> = {};
    const inScripts: Record<string, number> = {};
    let resolveEnd: () => void = () => undefined;
    const ended = new Promise<void>((resolve) => (resolveEnd = resolve));
    monitor = await startMonitor(options.redisPort, (command, firstArgument, source) => {
      const name = command.toLowerCase();
      if (name === 'echo' && firstArgument === END_MARKER) resolveEnd();
      else increment(source === SCRIPT_SOURCE ? inScripts : roundTrips, name);
    });
    // A monitor connection that fails midway fails the step rather than undercounting it.
    const failed = new Promise<never>((_, reject) => monitor?.once('error', reject));
    failed.catch(() => undefined);
    await sendSubmissions(options.url, options.authorization, options.requests);
    await client.echo(END_MARKER);
    const timeout = setTimeout(resolveEnd, MONITOR_DRAIN_TIMEOUT_MS);
    await Promise.race([ended, failed]);
    clearTimeout(timeout);
    const total = Object.values(roundTrips).reduce((sum, calls) => sum + calls, 0);
    return {
      requests: options.requests,
      roundTrips,
      inScripts,
      roundTripsPerRequest: total / options.requests,
    };
  } finally {
    monitor?.destroy();
    client.disconnect();
  }
}
