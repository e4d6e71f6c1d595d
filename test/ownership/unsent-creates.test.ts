// A create the gateway could not send leaves nothing behind (docs/ownership.md): when the connection to
// the upstream is refused, the upstream cannot have taken the submission, so its requestId is free again
// and its job's reservation is released; the client may submit the same requestId at once. Before,
// every 502 kept the claim, and the client's retry got 409 until the claim expired.
import { randomUUID } from 'node:crypto';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterAll, expect, test } from 'vitest';
import { freePort } from '../support/free-port.ts';
import { useGatewayHarness } from '../support/gateway-harness.ts';

const IMAGES = '/v1/images/generations';

/**
 * What stands in front of the upstream: nothing listening (connections refused), an upstream that refuses
 * gengate's credential without taking anything, or a plain pass-through to the simulator.
 */
type Door = 'closed' | 'refusing the credential' | 'cutting after the request' | 'open';

const REFUSAL_BODY = JSON.stringify({
  status: 401,
  error: { code: 'invalid_api_key', type: 'authentication_error', message: 'the API key is not valid' },
});
const REFUSAL =
  `HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\n` +
  `content-length: ${Buffer.byteLength(REFUSAL_BODY)}\r\nconnection: close\r\n\r\n${REFUSAL_BODY}`;

let front: { port: number; simulatorPort: number; door: Door; server?: Server } | undefined;
/** The gateway's connections to the front: cut at each change, so the next exchange meets the new door. */
const connections = new Set<Socket>();

const harness = useGatewayHarness({
  inFrontOfUpstream: async (simulatorUrl) => {
    front = { port: await freePort(), simulatorPort: Number(new URL(simulatorUrl).port), door: 'closed' };
    return { url: `http://127.0.0.1:${front.port}`, close: closeFront };
  },
});

async function setDoor(door: Door): Promise<void> {
  if (front === undefined) throw new Error('the harness has not started');
  front.door = door;
  for (const socket of connections) socket.destroy();
  if (door === 'closed') {
    await closeFront();
    return;
  }
  if (front.server !== undefined) return;
  const { simulatorPort } = front;
  const server = createServer((client) => {
    connections.add(client);
    client.once('close', () => connections.delete(client));
    client.on('error', () => client.destroy());
    if (front?.door === 'refusing the credential') {
      client.once('data', () => client.end(REFUSAL));
      return;
    }
    if (front?.door === 'cutting after the request') {
      client.once('data', () => client.destroy());
      return;
    }
    const upstream = connect(simulatorPort, '127.0.0.1');
    upstream.on('error', () => client.destroy());
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(front!.port, '127.0.0.1', resolve));
  front.server = server;
}

async function closeFront(): Promise<void> {
  const server = front?.server;
  if (server === undefined) return;
  front!.server = undefined;
  const closed = new Promise((resolve) => server.close(resolve));
  for (const socket of connections) socket.destroy();
  await closed;
}

afterAll(closeFront);

async function create(requestId: string) {
  const response = await fetch(`${harness.url}${IMAGES}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${harness.keys.alpha}`, 'content-type': 'application/json' },
    body: JSON.stringify({ requestId, input: { positivePrompt: 'a lighthouse' } }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function jobsInFlight(): Promise<number> {
  const response = await fetch(`${harness.url}/v1/account/usage`, {
    headers: { authorization: `Bearer ${harness.keys.alpha}` },
  });
  const { data } = (await response.json()) as { data: { jobsInFlight: number } };
  return data.jobsInFlight;
}

const creates = () =>
  harness.simulator.received.filter((entry) => entry.method === 'POST' && entry.url === IMAGES);

test('a connection refused: 502, and the same requestId is submitted again at once', async () => {
  const requestId = randomUUID();
  const refused = await create(requestId);
  expect(refused).toEqual({
    status: 502,
    body: {
      status: 502,
      error: {
        code: 'upstream_unavailable',
        type: 'upstream_error',
        message: 'the generation service could not be reached',
      },
    },
  });
  expect(await jobsInFlight()).toBe(0);
  const createsBefore = creates().length;

  await setDoor('open');
  const again = await create(requestId);
  expect(again).toEqual({ status: 200, body: { status: 200, data: { requestId } } });
  expect(creates()).toHaveLength(createsBefore + 1);
  expect(await jobsInFlight()).toBe(1);
});

test("the upstream refusing gengate's credential: 502, and the same requestId goes through once it takes it", async () => {
  await setDoor('refusing the credential');
  const inFlightBefore = await jobsInFlight();
  const requestId = randomUUID();
  const refused = await create(requestId);
  expect(refused).toMatchObject({ status: 502, body: { error: { code: 'upstream_credential_rejected' } } });
  expect(await jobsInFlight()).toBe(inFlightBefore);
  const createsBefore = creates().length;

  await setDoor('open');
  const again = await create(requestId);
  expect(again).toEqual({ status: 200, body: { status: 200, data: { requestId } } });
  expect(creates()).toHaveLength(createsBefore + 1);
  expect(await jobsInFlight()).toBe(inFlightBefore + 1);
});

// The other side of the line: a create that was written and then lost may have been taken, so its id
// stays claimed (409 on a repeat, never submitted twice) and its reservation stays for the tracker.
test('a connection lost after the request was written: 502, and the requestId stays claimed', async () => {
  await setDoor('cutting after the request');
  const inFlightBefore = await jobsInFlight();
  const requestId = randomUUID();
  expect(await create(requestId)).toMatchObject({
    status: 502,
    body: { error: { code: 'upstream_unavailable' } },
  });
  expect(await jobsInFlight()).toBe(inFlightBefore + 1);

  await setDoor('open');
  const createsBefore = creates().length;
  expect(await create(requestId)).toMatchObject({
    status: 409,
    body: { error: { code: 'request_id_conflict' } },
  });
  expect(creates()).toHaveLength(createsBefore);
});
