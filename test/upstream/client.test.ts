// The upstream client against a real listening server: what bounds an exchange in time must not outlive
// it, or a busy gateway holds every exchange's timer for the whole timeout (docs/performance.md).
import { createHook } from 'node:async_hooks';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createUpstreamClient } from '../../src/upstream/client.ts';

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

/** Timers created while `run` runs that are still pending afterwards (neither fired nor cleared). */
async function timersLeftBy(run: () => Promise<void>): Promise<number> {
  const pending = new Set<number>();
  const hook = createHook({
    init(asyncId, type) {
      if (type === 'Timeout') pending.add(asyncId);
    },
    destroy(asyncId) {
      pending.delete(asyncId);
    },
  }).enable();
  try {
    await run();
    // destroy hooks of cleared timers are emitted asynchronously.
    await new Promise((resolve) => setImmediate(resolve));
    return pending.size;
  } finally {
    hook.disable();
  }
}

test('a finished exchange leaves no timer behind', async () => {
  const client = createUpstreamClient({ baseUrl, timeoutMs: 60_000 });
  try {
    await client.send({ method: 'GET', path: '/warm-up', headers: {} });
    const left = await timersLeftBy(async () => {
      for (let index = 0; index < EXCHANGES; index++) {
        const response = await client.send({ method: 'GET', path: '/', headers: {} });
        expect(response.status).toBe(200);
      }
    });
    // undici keeps a few timers of its own (keep-alive); one per exchange would leave EXCHANGES.
    expect(left).toBeLessThan(5);
  } finally {
    await client.close();
  }
});
