// docs/configuration.md#the-http-edge-timeouts-and-limits: a client that sends its request slower than `server.requestTimeoutMs` is cut off
// within about a second of that bound (src/gateway/server-options.ts: Node looks for late requests every
// 500 ms instead of every 30 s), with 408 in the envelope; and while hundreds of such connections hang on,
// other clients are served as promptly as before.
import { connect, type Socket } from 'node:net';
import { describe, expect, test } from 'vitest';
import { useGatewayHarness } from '../support/gateway-harness.ts';
import { waitFor } from '../support/wait-for.ts';

const REQUEST_TIMEOUT_MS = 1_000;
// The bound plus Node's checking interval (500 ms) plus ample room for a loaded CI machine: the old
// interval of 30 s would still miss it by far.
const CUT_WITHIN_MS = REQUEST_TIMEOUT_MS + 4_000;
const DRIP_INTERVAL_MS = 100;
// Heads are written before the harness starts (test tables); `slowClient` puts the tenant's key in.
const ALPHA_KEY = '<alpha key>';

const harness = useGatewayHarness({ requestTimeoutMs: REQUEST_TIMEOUT_MS });

interface SlowClient {
  socket: Socket;
  openedAt: number;
  received: () => string;
  closed: Promise<number>;
}

/** Opens a connection, sends `head` and then one byte of `drip` every 100 ms, for as long as it is open. */
function slowClient(head: string, drip: string): SlowClient {
  const { hostname, port } = new URL(harness.url);
  const socket = connect(Number(port), hostname);
  const openedAt = performance.now();
  let received = '';
  let dripped = 0;
  const dripper = setInterval(() => {
    if (drip.length > 0 && socket.writable) socket.write(drip[dripped++ % drip.length]!);
  }, DRIP_INTERVAL_MS);
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  socket.on('error', () => {
    // The gateway may reset a connection it cut while bytes were still arriving; 'close' follows.
  });
  const closed = new Promise<number>((resolve) =>
    socket.on('close', () => {
      clearInterval(dripper);
      resolve(performance.now() - openedAt);
    }),
  );
  if (head.length > 0) socket.write(head.replace(ALPHA_KEY, harness.keys.alpha));
  return { socket, openedAt, received: () => received, closed };
}

const USAGE_HEAD = 'GET /v1/account/usage HTTP/1.1\r\nHost: gateway.test\r\n';
const TIMEOUT_BODY = JSON.stringify({
  status: 408,
  error: {
    code: 'request_timeout',
    type: 'validation_error',
    message: 'the request was not received in time',
  },
});

function expect408(client: SlowClient): void {
  const text = client.received();
  const [head = '', body] = text.split('\r\n\r\n');
  expect(head.split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
  expect(head).toMatch(/\r\nX-Request-Id: [0-9a-f-]{36}\r\n/);
  expect(head).toMatch(/\r\nConnection: close(\r\n|$)/);
  expect(body).toBe(TIMEOUT_BODY);
}

async function servedPromptly(): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${harness.url}/v1/account/usage`, {
    headers: { authorization: `Bearer ${harness.keys.alpha}` },
  });
  expect(response.status).toBe(200);
  return performance.now() - started;
}

describe('a client slower than server.requestTimeoutMs is cut within about a second of it, with 408', () => {
  test.each([
    ['a head sent one byte at a time', USAGE_HEAD, 'X-Slow: 1\r\n'],
    [
      'a body sent one byte at a time',
      `POST /v1/images/generations HTTP/1.1\r\nHost: gateway.test\r\nAuthorization: Bearer ${ALPHA_KEY}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n',
      ' ',
    ],
    ['a connection that never sends a byte', '', ''],
    ['a head that stops halfway', `${USAGE_HEAD}X-Half: `, ''],
  ])('%s', async (_name, head, drip) => {
    const client = slowClient(head, drip);
    const lifetime = await client.closed;
    expect(lifetime).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
    expect(lifetime).toBeLessThan(CUT_WITHIN_MS);
    expect408(client);
    expect(harness.simulator.received).toEqual([]);
    await servedPromptly();
  });

  test('the cut is logged with its id and the timeout code, without the bytes sent', async () => {
    const before = harness.logLines.length;
    const client = slowClient(`${USAGE_HEAD}Authorization: Bearer ${harness.keys.alpha}\r\n`, 'X');
    await client.closed;
    const lines = harness.logLines.slice(before).map((line) => JSON.parse(line) as Record<string, unknown>);
    const cut = lines.find((line) => line.msg === 'client error');
    expect(cut).toMatchObject({ status: 408, errorCode: 'ERR_HTTP_REQUEST_TIMEOUT' });
    expect(client.received()).toContain(`X-Request-Id: ${String(cut?.reqId)}\r\n`);
    expect(harness.logLines.slice(before).join('')).not.toContain(harness.keys.alpha);
  });
});

test('hundreds of idle and dripping connections: others are served promptly, and each is cut', async () => {
  await Promise.all(Array.from({ length: 5 }, servedPromptly));
  const hostile = [
    ...Array.from({ length: 150 }, () => slowClient('', '')),
    ...Array.from({ length: 150 }, () => slowClient(USAGE_HEAD, 'X-Slow: 1\r\n')),
  ];
  await waitFor('every hostile connection open', () =>
    hostile.every((client) => client.socket.readyState === 'open'),
  );
  // Served during the siege, not after it: each answer arrives while hostile connections still hang on,
  // whatever the machine's speed (a server starved by them would answer only once they are cut).
  for (let round = 0; round < 10; round += 1) {
    await servedPromptly();
    expect(hostile.some((client) => client.socket.readyState === 'open')).toBe(true);
  }
  const lifetimes = await Promise.all(hostile.map((client) => client.closed));
  expect(Math.max(...lifetimes)).toBeLessThan(CUT_WITHIN_MS + 4_000);
  for (const client of hostile) expect408(client);
  expect(harness.simulator.received).toEqual([]);
  await servedPromptly();
}, 20_000);

test('a request that times out behind one in flight: that one is answered first, then 408, and nothing after', async () => {
  harness.simulator.faults.set({ delayMs: 2_500, times: 1 });
  const before = harness.logLines.length;
  const inFlight =
    `POST /v1/images/generations HTTP/1.1\r\nHost: gateway.test\r\nAuthorization: Bearer ${ALPHA_KEY}\r\n` +
    'Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}';
  const client = slowClient(`${inFlight}${USAGE_HEAD}`, '');
  await waitFor('the second request to time out', () =>
    harness.logLines.slice(before).some((line) => line.includes('ERR_HTTP_REQUEST_TIMEOUT')),
  );
  // Its head completes now, while the first request is still waiting on the upstream: too late.
  client.socket.write(`Authorization: Bearer ${harness.keys.alpha}\r\n\r\n`);
  await client.closed;
  // Each response follows the previous body directly.
  const statusLines = [...client.received().matchAll(/HTTP\/1\.1 \d{3} [A-Za-z ]+(?=\r\n)/g)].map(
    ([line]) => line,
  );
  expect(statusLines).toEqual(['HTTP/1.1 200 OK', 'HTTP/1.1 408 Request Timeout']);
  expect(harness.simulator.received.map((request) => request.method)).toEqual(['POST']);
}, 10_000);
