// The upstream client against real listening servers: each answer gathered whole, bounded in size and in
// time, transport failures translated once; and what bounds an exchange in time must not outlive it, or
// a busy gateway holds every exchange's timer for the whole timeout (docs/performance.md).
import { createHook } from 'node:async_hooks';
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  createUpstreamClient,
  failedBeforeSending,
  type UpstreamClient,
  type UpstreamClientOptions,
  type UpstreamRequest,
} from '../../src/upstream/client.ts';
import { freePort } from '../support/free-port.ts';
import { waitFor } from '../support/wait-for.ts';

const EXCHANGES = 50;
let server: Server;
let baseUrl: string;

beforeAll(async () => {
  server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' }).end('{"status":200}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

// A timeout no other timer in the process uses, so the exchanges' own deadline timers can be told apart
// from undici's keep-alive and clock timers, whose number depends on how busy the machine is.
const EXCHANGE_TIMEOUT_MS = 61_237;

/** Timers of `delayMs` created while `run` runs, and how many of them are still pending afterwards. */
async function timersOf(
  delayMs: number,
  run: () => Promise<void>,
): Promise<{ created: number; left: number }> {
  const pending = new Set<number>();
  let created = 0;
  const hook = createHook({
    init(asyncId, type, _triggerAsyncId, resource) {
      if (type === 'Timeout' && (resource as { _idleTimeout?: number })._idleTimeout === delayMs) {
        created++;
        pending.add(asyncId);
      }
    },
    destroy(asyncId) {
      pending.delete(asyncId);
    },
  }).enable();
  try {
    await run();
    // destroy hooks of cleared timers are emitted asynchronously.
    await new Promise((resolve) => setImmediate(resolve));
    return { created, left: pending.size };
  } finally {
    hook.disable();
  }
}

test('a finished exchange leaves no timer behind', async () => {
  const client = createUpstreamClient({ baseUrl, timeoutMs: EXCHANGE_TIMEOUT_MS });
  try {
    await client.send({ method: 'GET', path: '/warm-up', headers: {} });
    const timers = await timersOf(EXCHANGE_TIMEOUT_MS, async () => {
      for (let index = 0; index < EXCHANGES; index++) {
        const response = await client.send({ method: 'GET', path: '/', headers: {} });
        expect(response.status).toBe(200);
      }
    });
    // One deadline per exchange, each cleared when its exchange settled.
    expect(timers).toEqual({ created: EXCHANGES, left: 0 });
  } finally {
    await client.close();
  }
});

const ENOUGH_TIME_MS = 5_000;

/** Runs `use` with a fresh client, and tears the client down whatever happens. */
async function withClient(
  options: Partial<UpstreamClientOptions> & { baseUrl: string },
  use: (client: UpstreamClient) => Promise<void>,
): Promise<void> {
  const client = createUpstreamClient({ timeoutMs: ENOUGH_TIME_MS, ...options });
  try {
    await use(client);
  } finally {
    await client.destroy();
  }
}

const get = (path: string): UpstreamRequest => ({ method: 'GET', path, headers: {} });
const failure = (code: string, message: string) => ({ code, message });

describe('one exchange, gathered whole', () => {
  let exchangeServer: Server;
  let exchangeUrl: string;
  const LARGE_BODY = Buffer.alloc(1_000_000, 'x');

  beforeAll(async () => {
    exchangeServer = createServer((request, response) => {
      switch (request.url) {
        case '/large':
          // Many chunks on the wire: the client must put them back together byte for byte.
          response.writeHead(200, { 'content-type': 'application/octet-stream' }).end(LARGE_BODY);
          return;
        case '/early-hints':
          response.writeEarlyHints({ link: '</style.css>; rel=preload' });
          response.writeHead(201, { 'content-type': 'application/json' }).end('{"status":201}');
          return;
        case '/trickle': {
          // Each gap is short, the whole exchange is long: only the overall deadline catches it.
          response.writeHead(200, { 'content-type': 'application/json' });
          const timer = setInterval(() => response.write(' '), 20);
          response.on('close', () => {
            clearInterval(timer);
          });
          return;
        }
        default:
          response.writeHead(404).end();
      }
    });
    await new Promise<void>((resolve) => exchangeServer.listen(0, '127.0.0.1', resolve));
    exchangeUrl = `http://127.0.0.1:${(exchangeServer.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    exchangeServer.closeAllConnections();
    await new Promise((resolve) => exchangeServer.close(resolve));
  });

  test('a body of many chunks arrives byte for byte', () =>
    withClient({ baseUrl: exchangeUrl }, async (client) => {
      const response = await client.send(get('/large'));
      expect(response.status).toBe(200);
      expect(response.headers['content-type']).toBe('application/octet-stream');
      expect(response.body.equals(LARGE_BODY)).toBe(true);
    }));

  test('an informational 103 is skipped: the final answer is the one returned', () =>
    withClient({ baseUrl: exchangeUrl }, async (client) => {
      const response = await client.send(get('/early-hints'));
      expect(response.status).toBe(201);
      expect(response.body.toString()).toBe('{"status":201}');
    }));

  test('a body beyond the size cap: 502 upstream_unavailable', () =>
    withClient({ baseUrl: exchangeUrl, maxResponseBytes: 1_000 }, async (client) => {
      await expect(client.send(get('/large'))).rejects.toMatchObject(
        failure('upstream_unavailable', 'the generation service sent a response larger than allowed'),
      );
    }));

  test('an exchange longer than timeoutMs, though never silent for long: 504 upstream_timeout', () =>
    withClient({ baseUrl: exchangeUrl, timeoutMs: 200 }, async (client) => {
      const error = await client.send(get('/trickle')).catch((failed: unknown) => failed);
      expect(error).toMatchObject(
        failure('upstream_timeout', 'the generation service did not answer in time'),
      );
      // Sent: the upstream may have taken it (src/gateway/create-outcome.ts).
      expect(failedBeforeSending(error)).toBe(false);
    }));

  test('a status beyond 599, or a connection reset mid-body: 502 upstream_unavailable', async () => {
    const raw = createNetServer((socket) => {
      socket.once('data', (request) => {
        if (request.toString().startsWith('GET /status-600 ')) {
          socket.end('HTTP/1.1 600 Unheard Of\r\ncontent-length: 2\r\n\r\n{}');
        } else {
          socket.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n{"status":');
          setImmediate(() => socket.destroy());
        }
      });
    });
    await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
    try {
      await withClient(
        { baseUrl: `http://127.0.0.1:${(raw.address() as AddressInfo).port}` },
        async (client) => {
          await expect(client.send(get('/status-600'))).rejects.toMatchObject(
            failure('upstream_unavailable', 'the generation service sent an invalid status'),
          );
          const torn = await client.send(get('/torn')).catch((failed: unknown) => failed);
          expect(torn).toMatchObject(
            failure('upstream_unavailable', 'the generation service could not be reached'),
          );
          expect(failedBeforeSending(torn)).toBe(false);
        },
      );
    } finally {
      await new Promise((resolve) => raw.close(resolve));
    }
  });

  test('nobody listening: 502 upstream_unavailable, the request never sent', async () => {
    const port = await freePort();
    await withClient({ baseUrl: `http://127.0.0.1:${port}` }, async (client) => {
      const error = await client.send(get('/')).catch((failed: unknown) => failed);
      expect(error).toMatchObject(
        failure('upstream_unavailable', 'the generation service could not be reached'),
      );
      expect(failedBeforeSending(error)).toBe(true);
    });
  });
});

describe('bounded concurrency towards the upstream', () => {
  let heldServer: Server;
  let heldUrl: string;
  /** Answers held until released, and the most held at once. */
  const held: (() => void)[] = [];
  let mostAtOnce = 0;

  beforeAll(async () => {
    heldServer = createServer((_request, response) => {
      held.push(() => response.writeHead(200).end('{"status":200}'));
      mostAtOnce = Math.max(mostAtOnce, held.length);
    });
    await new Promise<void>((resolve) => heldServer.listen(0, '127.0.0.1', resolve));
    heldUrl = `http://127.0.0.1:${(heldServer.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    heldServer.closeAllConnections();
    await new Promise((resolve) => heldServer.close(resolve));
  });

  const releaseFirst = () => {
    held.shift()?.();
  };

  test('a request waiting longer than queueTimeoutMs for a connection: 503 overloaded, Retry-After', () => {
    let timedOut = 0;
    const options = {
      baseUrl: heldUrl,
      connections: 1,
      queueTimeoutMs: 100,
      retryAfterSeconds: 2,
      onQueueTimeout: () => {
        timedOut++;
      },
    };
    return withClient(options, async (client) => {
      const first = client.send(get('/first'));
      const second = await client.send(get('/second')).catch((failed: unknown) => failed);
      expect(failedBeforeSending(second)).toBe(true);
      expect(second).toMatchObject({
        code: 'overloaded',
        status: 503,
        message:
          'this gateway replica has too many requests waiting for the generation service; retry shortly',
        headers: { 'retry-after': '2' },
      });
      expect(timedOut).toBe(1);
      releaseFirst();
      expect((await first).status).toBe(200);
    });
  });

  test('requests beyond `connections` wait for a free one, never more at once', () =>
    withClient({ baseUrl: heldUrl, connections: 2, queueTimeoutMs: ENOUGH_TIME_MS }, async (client) => {
      mostAtOnce = 0;
      const answers = Array.from({ length: 6 }, (_, index) => client.send(get(`/${index}`)));
      for (let released = 0; released < 6; released++) {
        await waitFor('a held request', () => held.length > 0);
        releaseFirst();
      }
      expect((await Promise.all(answers)).map((answer) => answer.status)).toEqual([
        200, 200, 200, 200, 200, 200,
      ]);
      expect(mostAtOnce).toBe(2);
    }));

  test('reports its bound and the exchanges running, for gengate_upstream_connections_in_use', async () => {
    let reported: { limit: number; running: () => number } | undefined;
    const options = {
      baseUrl: heldUrl,
      connections: 3,
      queueTimeoutMs: ENOUGH_TIME_MS,
      reportConnectionsFrom: (limit: number, running: () => number) => {
        reported = { limit, running };
      },
    };
    await withClient(options, async (client) => {
      expect(reported?.limit).toBe(3);
      expect(reported?.running()).toBe(0);
      const answers = [client.send(get('/a')), client.send(get('/b'))];
      await waitFor('two held requests', () => held.length === 2);
      expect(reported?.running()).toBe(2);
      releaseFirst();
      releaseFirst();
      await Promise.all(answers);
      expect(reported?.running()).toBe(0);
    });
  });

  test('no tenant holds more than maxTenantShare of the connections: another tenant is served at once (finding 8)', () =>
    withClient(
      { baseUrl: heldUrl, connections: 4, maxTenantShare: 0.5, queueTimeoutMs: ENOUGH_TIME_MS },
      async (client) => {
        mostAtOnce = 0;
        const asTenant = (tenant: string, path: string) => client.send({ ...get(path), tenant });
        // The greedy tenant's polls: two run (its half of four), four wait for its own to end.
        const greedy = Array.from({ length: 6 }, (_, index) => asTenant('greedy', `/greedy/${index}`));
        await waitFor('its share held', () => held.length === 2);
        // Another tenant's request does not wait behind them: two connections are still free for it.
        const other = asTenant('other', '/other');
        await waitFor('the other tenant at the upstream', () => held.length === 3);
        expect(mostAtOnce).toBe(3);
        // Released in arrival order: the greedy tenant's first two, then the other tenant's.
        for (let released = 0; released < 7; released++) {
          await waitFor('a held request', () => held.length > 0);
          releaseFirst();
        }
        expect((await other).status).toBe(200);
        expect((await Promise.all(greedy)).every((answer) => answer.status === 200)).toBe(true);
        expect(mostAtOnce).toBe(3);
      },
    ));
});
