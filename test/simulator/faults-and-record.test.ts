// What tests need from a fake upstream: a record of every request that arrived (before any check), and
// faults (delay, 500/503, dropped connection, stalled body), from the handle and over the control API.
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import type { SimulatorServer } from '../../src/simulator/server.ts';
import { AUTH, call, postImage, startTestSimulator, TOKENS } from './simulator-client.ts';

let simulator: SimulatorServer;
beforeAll(async () => {
  simulator = await startTestSimulator();
});
afterAll(async () => {
  await simulator.close();
});
beforeEach(() => {
  simulator.clearReceived();
  simulator.faults.clear();
});

describe('the request record', () => {
  test('every request, in arrival order, with method, target, headers and raw body bytes, even refused ones', async () => {
    const body = '{"seed":9223372036854775807,"input":{"positivePrompt":"ünïcödé"}}';
    await call(simulator, 'POST', '/v1/images/generations', { body, headers: { 'x-request-id': 'trace-1' } });
    await call(simulator, 'GET', '/v1/account/keys', { auth: null });
    await call(simulator, 'POST', '/nowhere?x=1', { body: 'not json' });
    expect(simulator.received.map((entry) => `${entry.method} ${entry.url}`)).toEqual([
      'POST /v1/images/generations',
      'GET /v1/account/keys',
      'POST /nowhere?x=1',
    ]);
    const [created, unauthenticated, stray] = simulator.received;
    expect(created!.body).toEqual(Buffer.from(body, 'utf8'));
    expect(created!.headers.authorization).toBe(AUTH.alpha);
    expect(created!.headers['x-request-id']).toBe('trace-1');
    expect(typeof created!.at).toBe('number');
    expect(unauthenticated!.headers.authorization).toBeUndefined();
    expect(unauthenticated!.body).toEqual(Buffer.alloc(0));
    expect(stray!.body.toString('utf8')).toBe('not json');
  });

  test('clearReceived empties the live record', async () => {
    await call(simulator, 'GET', '/v1/account/keys');
    const live = simulator.received;
    simulator.clearReceived();
    expect(live).toEqual([]);
    await call(simulator, 'GET', '/v1/keys');
    expect(live.map((entry) => entry.url)).toEqual(['/v1/keys']);
  });

  test('the control API reads the record with base64 bodies and clears it; it is not recorded itself', async () => {
    await call(simulator, 'POST', '/v1/images/generations', { body: '{"samples":2}' });
    const read = await call(simulator, 'GET', '/__simulator/requests', { auth: null });
    expect(read.status).toBe(200);
    const { requests } = read.body as {
      requests: { method: string; url: string; body: string; headers: Record<string, string> }[];
    };
    expect(requests.map(({ method, url, body }) => ({ method, url, body }))).toEqual([
      {
        method: 'POST',
        url: '/v1/images/generations',
        body: Buffer.from('{"samples":2}').toString('base64'),
      },
    ]);
    expect(requests[0]!.headers.authorization).toBe(`Bearer ${TOKENS.alpha}`);
    expect((await call(simulator, 'DELETE', '/__simulator/requests', { auth: null })).status).toBe(204);
    expect(simulator.received).toEqual([]);
  });
});

describe('faults', () => {
  test.each([
    [500, 'internal_error', 'the service failed to process the request (simulated)'],
    [503, 'service_unavailable', 'the service is temporarily unavailable (simulated)'],
  ] as const)('status %d, once, in the service envelope', async (status, code, message) => {
    simulator.faults.set({ status, times: 1 });
    const failed = await postImage(simulator, {});
    expect(failed.status).toBe(status);
    expect(failed.body).toEqual({ status, error: { code, type: 'unavailable_error', message } });
    expect((await postImage(simulator, {})).status).toBe(200);
    expect(simulator.received).toHaveLength(2);
  });

  test('a delay holds the answer, then the request is handled normally', async () => {
    simulator.faults.set({ delayMs: 300, times: 1 });
    const started = performance.now();
    const requestId = randomUUID();
    const answer = await postImage(simulator, { requestId });
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    expect(answer.body).toEqual({ status: 200, data: { requestId } });
  });

  test('a dropped connection gives the client a socket error', async () => {
    simulator.faults.set({ dropConnection: true, times: 1 });
    await expect(postImage(simulator, {})).rejects.toThrow(TypeError);
    expect(simulator.received).toHaveLength(1);
  });

  test('a stalled body: headers and part of the body arrive, the rest never does', async () => {
    simulator.faults.set({ stallBody: true, times: 1 });
    const { url } = simulator;
    const received = await new Promise<{
      status: number | undefined;
      firstChunk: string;
      contentLength: number;
    }>((resolve, reject) => {
      const outgoing = httpRequest(
        `${url}/v1/account/keys`,
        { headers: { authorization: AUTH.alpha } },
        (response) => {
          response.once('data', (chunk: Buffer) => {
            resolve({
              status: response.statusCode,
              firstChunk: chunk.toString('utf8'),
              contentLength: Number(response.headers['content-length']),
            });
            outgoing.destroy();
          });
        },
      );
      outgoing.on('error', (error) => {
        if (!outgoing.destroyed) reject(error);
      });
      outgoing.end();
    });
    expect(received.status).toBe(200);
    expect(received.firstChunk.length).toBeLessThan(received.contentLength);
    expect(received.firstChunk.startsWith('{"status":200')).toBe(true);
  });

  test('match limits a fault to a method and a path prefix; times counts matching requests only', async () => {
    simulator.faults.set({ status: 503, times: 2, match: { method: 'GET', pathPrefix: '/v1/account/' } });
    expect((await postImage(simulator, {})).status).toBe(200);
    expect((await call(simulator, 'GET', '/v1/keys')).status).toBe(200);
    expect((await call(simulator, 'GET', '/v1/account/keys')).status).toBe(503);
    expect((await call(simulator, 'GET', '/v1/account/usage')).status).toBe(503);
    expect((await call(simulator, 'GET', '/v1/account/usage')).status).toBe(200);
    expect(simulator.faults.current()).toBeUndefined();
  });

  test('faults never touch the control API or the result files', async () => {
    simulator.faults.set({ status: 500 });
    expect((await call(simulator, 'GET', '/__simulator/faults', { auth: null })).body).toEqual({
      fault: { status: 500 },
    });
    expect((await call(simulator, 'GET', '/files/none/0.png', { auth: null })).status).toBe(404);
  });

  test('the control API sets, shows and clears faults, and refuses a malformed one', async () => {
    const put = await call(simulator, 'PUT', '/__simulator/faults', {
      auth: null,
      body: '{"status":503,"times":1}',
    });
    expect(put.status).toBe(204);
    expect((await call(simulator, 'GET', '/__simulator/faults', { auth: null })).body).toEqual({
      fault: { status: 503, times: 1 },
    });
    expect((await postImage(simulator, {})).status).toBe(503);
    simulator.faults.set({ status: 500 });
    expect((await call(simulator, 'DELETE', '/__simulator/faults', { auth: null })).status).toBe(204);
    expect((await postImage(simulator, {})).status).toBe(200);

    const malformed = await call(simulator, 'PUT', '/__simulator/faults', {
      auth: null,
      body: '{"status":404}',
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toEqual({
      status: 400,
      error: {
        code: 'invalid_parameter',
        type: 'validation_error',
        message: 'status must be one of 500, 503',
        param: 'status',
        details: [{ param: 'status', message: 'must be one of 500, 503' }],
      },
    });
  });

  test('the simulator closes promptly with a stalled response and a pending delay', async () => {
    const local = await startTestSimulator();
    local.faults.set({ stallBody: true, times: 1 });
    // Outcomes are captured at once: the rejections come while close() runs, before any await below.
    const outcome = (request: Promise<unknown>) =>
      request.then(
        () => 'answered',
        () => 'failed',
      );
    const stalled = outcome(
      fetch(`${local.url}/v1/keys`, { headers: { authorization: AUTH.alpha } }).then((response) =>
        response.text(),
      ),
    );
    await expect.poll(() => local.received.length).toBe(1);
    local.faults.set({ delayMs: 60_000 });
    const delayed = outcome(fetch(`${local.url}/v1/keys`, { headers: { authorization: AUTH.alpha } }));
    await expect.poll(() => local.received.length).toBe(2);
    const started = performance.now();
    await local.close();
    // Far below the 60 s delay it must not wait for, with room for a busy machine.
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(await stalled).toBe('failed');
    expect(await delayed).toBe('failed');
  });
});
