// How many times gengate goes to Redis per request. Redis MONITOR sees every command with its source: a
// client address for a network round trip, "lua" for a command a script ran inside Redis. Counting both
// around a known number of requests separates round trips from the work scripts do. Background work
// (the usage meter's one-second flush) shows up as its own commands.
import { Redis } from 'ioredis';
import { SUBMISSION_BODY, SUBMISSION_RESPONSE } from './request-body.ts';

const CONCURRENCY = 8;
const SCRIPT_SOURCE = 'lua';
// Sent once the requests are answered: MONITOR delivers in order, so seeing it means nothing is missing.
const END_MARKER = 'gengate-bench-end-of-requests';
const MONITOR_DRAIN_TIMEOUT_MS = 5_000;

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
  const monitor = await client.monitor();
  try {
    const roundTrips: Record<string, number> = {};
    const inScripts: Record<string, number> = {};
    let resolveEnd: () => void = () => undefined;
    const ended = new Promise<void>((resolve) => (resolveEnd = resolve));
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      const name = (args[0] ?? '').toLowerCase();
      if (name === 'echo' && args[1] === END_MARKER) resolveEnd();
      else increment(source === SCRIPT_SOURCE ? inScripts : roundTrips, name);
    });
    await sendSubmissions(options.url, options.authorization, options.requests);
    await client.echo(END_MARKER);
    const timeout = setTimeout(resolveEnd, MONITOR_DRAIN_TIMEOUT_MS);
    await ended;
    clearTimeout(timeout);
    const total = Object.values(roundTrips).reduce((sum, calls) => sum + calls, 0);
    return {
      requests: options.requests,
      roundTrips,
      inScripts,
      roundTripsPerRequest: total / options.requests,
    };
  } finally {
    monitor.disconnect();
    client.disconnect();
  }
}
