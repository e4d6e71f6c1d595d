// A request that already waited longer than `server.overload.maxQueueWaitMs` before the gateway could look at
// it (behind an event loop held by other work, as during a flood) is answered 503 overloaded with
// Retry-After at once rather than served late: it never reaches the upstream, readiness reports it, and
// gengate_load_shed_total{reason="queue_wait"} counts it. Once the loop turns freely, requests are served.
import { connect, type Socket } from 'node:net';
import pino from 'pino';
import { Agent, request } from 'undici';
import { afterEach, expect, test } from 'vitest';
import { buildAdminApp } from '../../src/admin/app.ts';
import { createReadiness } from '../../src/admin/readiness.ts';
import { isOverloaded } from '../../src/overload/shed-load.ts';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.ts';
import { waitFor } from '../support/wait-for.ts';

const MAX_QUEUE_WAIT_MS = 200;
// Far past the bound, as a turn of a flooded loop is.
const HELD_MS = 1_000;

let harness: GatewayHarness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** Holds the event loop (the gateway's: it runs in this process) for `ms`. */
function holdTheLoop(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // Busy, as a loop flooded with work is.
  }
}

function createBody(): string {
  return JSON.stringify({ input: { positivePrompt: 'a lighthouse', seedImage: 'x'.repeat(64 * 1024) } });
}

function rawCreate(gateway: GatewayHarness, body: string): string {
  return (
    'POST /v1/images/generations HTTP/1.1\r\nhost: gengate\r\n' +
    `authorization: Bearer ${gateway.keys.alpha}\r\ncontent-type: application/json\r\n` +
    `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

/** The whole answer on `socket`, read until the gateway closes the connection. */
function answerOn(socket: Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    socket.on('end', () => {
      resolve(text);
    });
    socket.on('error', reject);
  });
}

function adminOf(gateway: GatewayHarness) {
  const readiness = createReadiness({ overloaded: () => isOverloaded(gateway.app) });
  readiness.markReady();
  return buildAdminApp({ logger: pino({ level: 'silent' }), metrics: gateway.metrics, readiness });
}

// Readiness reports the shed for the Retry-After it gave: long enough here to be read on a loaded machine.
const RETRY_AFTER_SECONDS = 60;
const overloadYaml =
  `{ maxEventLoopDelayMs: 0, maxHeapUsedRatio: 1, maxQueueWaitMs: ${MAX_QUEUE_WAIT_MS}, ` +
  `retryAfterSeconds: ${RETRY_AFTER_SECONDS} }`;

test('a new connection that waited behind a held loop: 503 overloaded at once, nothing forwarded', async () => {
  harness = await startGatewayHarness({ overloadYaml });
  const gateway = harness;
  const admin = adminOf(gateway);
  try {
    const forwarded = gateway.simulator.received.length;
    const socket = connect({ port: Number(new URL(gateway.url).port), host: '127.0.0.1' });
    const answer = answerOn(socket);
    // The connection is made by the kernel and the request sent while the loop is held, as a flood's are.
    socket.once('connect', () => {
      socket.write(rawCreate(gateway, createBody()));
      holdTheLoop(HELD_MS);
    });
    const text = await answer;
    socket.destroy();
    const [head = '', body] = text.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 503 /);
    expect(head).toMatch(new RegExp(`\r\nretry-after: ${RETRY_AFTER_SECONDS}\r\n`, 'i'));
    expect(head).toMatch(/\r\nx-request-id: [0-9a-f-]{36}\r\n/i);
    expect(JSON.parse(body ?? '')).toEqual({
      status: 503,
      error: {
        code: 'overloaded',
        type: 'unavailable_error',
        message: 'this gateway replica is overloaded; retry shortly',
      },
    });
    expect(gateway.simulator.received).toHaveLength(forwarded);
    expect((await admin.inject('/readyz')).statusCode).toBe(503);
    await waitFor('the shed counted', async () =>
      (await admin.inject('/metrics')).body.includes('gengate_load_shed_total{reason="queue_wait"} 1'),
    );
    // Once the loop turns freely again, a request is served and readiness recovers.
    await waitFor('a request served again', async () => {
      const served = await fetch(`${gateway.url}/v1/images/generations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gateway.keys.alpha}`, 'content-type': 'application/json' },
        body: createBody(),
      });
      return served.status === 200;
    });
  } finally {
    await admin.close();
  }
});

test('a request on a kept-alive connection that waited behind a held loop: 503 overloaded', async () => {
  harness = await startGatewayHarness({ overloadYaml });
  const gateway = harness;
  const agent = new Agent({ connections: 1 });
  try {
    const send = () =>
      request(`${gateway.url}/v1/images/generations`, {
        dispatcher: agent,
        method: 'POST',
        headers: { authorization: `Bearer ${gateway.keys.alpha}`, 'content-type': 'application/json' },
        body: createBody(),
      });
    // The connection opened and used once (a loaded machine may hold this loop too: then again).
    await waitFor('a request served on the connection', async () => {
      const first = await send();
      await first.body.text();
      return first.statusCode === 200;
    });
    const forwarded = gateway.simulator.received.length;
    // Written on the open connection, then the loop is held before the gateway reads it.
    const second = send();
    await new Promise((resolve) => setImmediate(resolve));
    holdTheLoop(HELD_MS);
    const answer = await second;
    const body = (await answer.body.json()) as { error?: { code?: string } };
    expect([answer.statusCode, answer.headers['retry-after'], body.error?.code]).toEqual([
      503,
      String(RETRY_AFTER_SECONDS),
      'overloaded',
    ]);
    expect(gateway.simulator.received).toHaveLength(forwarded);
  } finally {
    await agent.close();
  }
});

test('with the bound at 0 nothing is shed for its wait', async () => {
  harness = await startGatewayHarness({
    overloadYaml: '{ maxEventLoopDelayMs: 0, maxHeapUsedRatio: 1, maxQueueWaitMs: 0 }',
  });
  const gateway = harness;
  const socket = connect({ port: Number(new URL(gateway.url).port), host: '127.0.0.1' });
  const answer = answerOn(socket);
  socket.once('connect', () => {
    socket.write(
      rawCreate(gateway, createBody()).replace('host: gengate', 'host: gengate\r\nconnection: close'),
    );
    holdTheLoop(HELD_MS);
  });
  expect(await answer).toMatch(/^HTTP\/1\.1 200 /);
  socket.destroy();
});
