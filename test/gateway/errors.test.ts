// Errors (docs/security.md#what-gengate-refuses-and-how, docs/operations.md#clients-get-502-or-504): failures the gateway produces itself, and the upstream's transport failures,
// all in the service's envelope. A request refused here never reaches the upstream.
import { afterEach, describe, expect, test } from 'vitest';
import { startGatewayHarness, useGatewayHarness } from '../support/gateway-harness.ts';
import { sendRaw } from '../support/raw-http.ts';

const harness = useGatewayHarness({ upstreamTimeoutMs: 300, bodyLimitBytes: 1024 });

async function post(
  body: string | Uint8Array,
  headers: Record<string, string> = { 'content-type': 'application/json' },
) {
  const response = await fetch(`${harness.url}/v1/images/generations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${harness.keys.alpha}`, ...headers },
    body,
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

function envelope(status: number, code: string, type: string, message: string) {
  return { status, error: { code, type, message } };
}

describe('bodies the gateway refuses', () => {
  test.each([
    ['text/plain', 'hello'],
    ['application/x-www-form-urlencoded', 'a=1'],
    ['application/json; charset=latin1', '{}'],
  ])('Content-Type %s: 415 unsupported_media_type', async (contentType, body) => {
    const response = await post(body, { 'content-type': contentType });
    expect(response.status).toBe(415);
    expect(response.body).toMatchObject({
      status: 415,
      error: { code: 'unsupported_media_type', type: 'validation_error' },
    });
  });

  test('a gzip-encoded body: 415', async () => {
    const response = await post('{}', { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    expect(response.body).toEqual(
      envelope(
        415,
        'unsupported_media_type',
        'validation_error',
        'compressed request bodies are not accepted',
      ),
    );
  });

  test('a body over the limit: 413 payload_too_large', async () => {
    const response = await post(JSON.stringify({ input: { positivePrompt: 'x'.repeat(2000) } }));
    expect(response.body).toEqual(
      envelope(
        413,
        'payload_too_large',
        'validation_error',
        'the request body is larger than this gateway accepts',
      ),
    );
  });

  test.each([
    ['broken JSON', '{"samples":', 'the request body is not valid UTF-8 JSON'],
    ['a JSON array', '[1,2]', 'the request body must be a JSON object'],
    ['a JSON string', '"hi"', 'the request body must be a JSON object'],
    ['null', 'null', 'the request body must be a JSON object'],
    ['a byte-order mark', '\ufeff{}', 'the request body is not valid UTF-8 JSON'],
    ['trailing garbage', '{} x', 'the request body is not valid UTF-8 JSON'],
    ['an empty body', '', 'the request body is empty; send a JSON object'],
  ])('%s: 400 invalid_json', async (_name, body, message) => {
    const response = await post(body);
    expect(response.body).toEqual(envelope(400, 'invalid_json', 'validation_error', message));
  });

  test('invalid UTF-8: 400 invalid_json', async () => {
    const response = await post(new Uint8Array([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x3a, 0x31, 0x7d]));
    expect(response.body).toEqual(
      envelope(400, 'invalid_json', 'validation_error', 'the request body is not valid UTF-8 JSON'),
    );
  });

  // Each refusal above must have stopped at the gateway (the record is emptied before each test).
  afterEach(() => {
    expect(harness.simulator.received).toEqual([]);
  });
});

describe('upstream failures', () => {
  test('gengate_upstream_errors_total counts 504s as timeout and 502s as unavailable, per route', async () => {
    const count = async (reason: string) =>
      (await harness.metrics.upstreamErrors.get()).values.find(
        ({ labels }) => labels.route === 'images.create' && labels.reason === reason,
      )?.value;
    const before = { timeout: await count('timeout'), unavailable: await count('unavailable') };
    harness.simulator.faults.set({ delayMs: 2000, times: 1 });
    expect((await post('{}')).status).toBe(504);
    harness.simulator.faults.set({ dropConnection: true, times: 1 });
    expect((await post('{}')).status).toBe(502);
    // An upstream that answers, even with an error, is no upstream error of the gateway's.
    harness.simulator.faults.set({ status: 500, times: 1 });
    expect((await post('{}')).status).toBe(500);
    expect({ timeout: await count('timeout'), unavailable: await count('unavailable') }).toEqual({
      timeout: (before.timeout ?? Number.NaN) + 1,
      unavailable: (before.unavailable ?? Number.NaN) + 1,
    });
  });

  test('a 500 from the upstream is passed through with its body', async () => {
    harness.simulator.faults.set({ status: 500, times: 1 });
    const response = await post('{}');
    expect(response.status).toBe(500);
    expect(response.body).toMatchObject({ error: { type: expect.any(String) as unknown } });
  });

  test('a slow upstream: 504 upstream_timeout', async () => {
    harness.simulator.faults.set({ delayMs: 2000, times: 1 });
    const response = await post('{}');
    expect(response.body).toEqual(
      envelope(504, 'upstream_timeout', 'upstream_error', 'the generation service did not answer in time'),
    );
  });

  test('a stalled body: 504 upstream_timeout, not a torn response', async () => {
    harness.simulator.faults.set({ stallBody: true, times: 1 });
    const response = await post('{}');
    expect(response.body).toEqual(
      envelope(504, 'upstream_timeout', 'upstream_error', 'the generation service did not answer in time'),
    );
  });

  test('a dropped connection: 502 upstream_unavailable', async () => {
    harness.simulator.faults.set({ dropConnection: true, times: 1 });
    const response = await post('{}');
    expect(response.body).toEqual(
      envelope(502, 'upstream_unavailable', 'upstream_error', 'the generation service could not be reached'),
    );
  });

  test('an upstream 429 becomes upstream_rate_limited with its Retry-After', async () => {
    const limited = await startGatewayHarness({ simulatorRequestsPerMinute: 1 });
    try {
      const call = () =>
        fetch(`${limited.url}/v1/images/generations`, {
          method: 'POST',
          headers: { authorization: `Bearer ${limited.keys.alpha}`, 'content-type': 'application/json' },
          body: '{}',
        });
      expect((await call()).status).toBe(200);
      const refused = await call();
      expect(await refused.json()).toEqual(
        envelope(
          429,
          'upstream_rate_limited',
          'rate_limit_error',
          'the generation service is rate limiting this gateway',
        ),
      );
      const retryAfter = Number(refused.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(refused.headers.get('x-ratelimit-limit')).toBeNull();
    } finally {
      await limited.close();
    }
  });
});

describe('what the HTTP parser refuses, answered in the envelope with an X-Request-Id', () => {
  test('bytes that are not HTTP: 400 bad_request', async () => {
    const response = await sendRaw(harness.url, 'GET /v1/account/usage', 'HTTP/9.9\u0000garbage');
    expect(response.status).toBe(400);
    expect(response.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.parse(response.body)).toEqual(
      envelope(400, 'bad_request', 'validation_error', 'the request is not valid HTTP'),
    );
  });

  test('headers beyond the server limit: 431 request_headers_too_large', async () => {
    const response = await sendRaw(harness.url, 'GET', '/v1/account/usage', {
      'x-padding': 'p'.repeat(20_000),
    });
    expect(response.status).toBe(431);
    expect(response.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.parse(response.body)).toEqual(
      envelope(
        431,
        'request_headers_too_large',
        'validation_error',
        'the request headers are larger than this gateway accepts',
      ),
    );
  });
});
