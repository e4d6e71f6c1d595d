// How many store round trips a request waits for: the hot-path figure of docs/performance.md, measured from outside.
// A second gengate reaches Redis through a relay that can hold every chunk for `delayMs` in each
// direction. The same sequential creates are timed with the relay at 0 and at `delayMs`: each round trip
// the request waits for adds 2 × delayMs, and writes the gateway does not wait for (the record of the
// answer) add nothing.
import { createServer, connect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { startGengate } from './gengate.ts';
import { SUBMISSION_BODY, SUBMISSION_PATH, SUBMISSION_RESPONSE } from './request-body.ts';

export interface StoreWaits {
  requests: number;
  delayMs: number;
  /** Median create latency, ms, without and with the delay. */
  medianMs: { undelayed: number; delayed: number };
  /** (delayed − undelayed) / (2 × delayMs): store round trips on the request's path. */
  waitedRoundTripsPerRequest: number;
}

/** A TCP relay to Redis whose delay can be changed while it runs; order is kept (same delay, FIFO timers). */
async function startDelayRelay(redisPort: number) {
  let delayMs = 0;
  const sockets = new Set<Socket>();
  const forward = (from: Socket, to: Socket) => {
    from.on('data', (chunk) => {
      if (delayMs === 0) to.write(chunk);
      else setTimeout(() => to.write(chunk), delayMs);
    });
  };
  const server = createServer((client) => {
    const redis = connect(redisPort, '127.0.0.1');
    for (const socket of [client, redis]) {
      // Nagle's algorithm would hold small replies back for tens of ms and count as store time.
      socket.setNoDelay(true);
      sockets.add(socket);
      socket.on('error', () => socket.destroy());
      socket.on('close', () => {
        sockets.delete(socket);
        client.destroy();
        redis.destroy();
      });
    }
    forward(client, redis);
    forward(redis, client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('relay has no port');
  return {
    url: `redis://127.0.0.1:${address.port}`,
    setDelay(ms: number) {
      delayMs = ms;
    },
    close() {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

async function medianCreateMs(url: string, authorization: string, requests: number): Promise<number> {
  const times: number[] = [];
  for (let index = 0; index < requests; index++) {
    const started = performance.now();
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization },
      body: SUBMISSION_BODY,
    });
    const body = await response.text();
    times.push(performance.now() - started);
    if (response.status !== 200 || body !== SUBMISSION_RESPONSE) {
      throw new Error(`gengate answered ${response.status}: ${body}`);
    }
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] ?? Number.NaN;
}

export async function measureStoreWaits(options: {
  workDir: string;
  upstreamUrl: string;
  redisPort: number;
  delayMs: number;
  requests: number;
}): Promise<StoreWaits> {
  const relay = await startDelayRelay(options.redisPort);
  const gengate = await startGengate({
    workDir: options.workDir,
    upstreamUrl: options.upstreamUrl,
    redisUrl: relay.url,
    name: 'gengate-store-waits',
    // The relay's delay must not count as a store failure.
    commandTimeoutMs: 20 * options.delayMs + 1_000,
  });
  try {
    const url = `http://127.0.0.1:${gengate.port}${SUBMISSION_PATH}`;
    await medianCreateMs(url, gengate.authorization, options.requests); // warm-up
    const undelayed = await medianCreateMs(url, gengate.authorization, options.requests);
    relay.setDelay(options.delayMs);
    const delayed = await medianCreateMs(url, gengate.authorization, options.requests);
    return {
      requests: options.requests,
      delayMs: options.delayMs,
      medianMs: { undelayed, delayed },
      waitedRoundTripsPerRequest: (delayed - undelayed) / (2 * options.delayMs),
    };
  } finally {
    await gengate.process.stop();
    relay.close();
  }
}
