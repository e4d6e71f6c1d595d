// The spine of the gateway: each allowlisted route reaches the upstream with the tenant's upstream
// token in place of its gengate key, with the body unchanged and only allowlisted headers.
import { randomUUID } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { sentWithAssignedRequestId, useGatewayHarness, UPSTREAM_TOKENS } from '../support/gateway-harness.ts';
import { sendRaw } from '../support/raw-http.ts';

// Everything the upstream may see: built by the gateway, never copied from the client.
const FORWARDED_HEADERS = new Set([
  'host',
  'connection',
  'authorization',
  'accept',
  'user-agent',
  'x-request-id',
  'content-type',
  'content-length',
]);

const harness = useGatewayHarness();

function call(
  method: string,
  path: string,
  key: string,
  body?: string,
  extraHeaders: Record<string, string> = {},
) {
  return fetch(`${harness.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...extraHeaders,
    },
    ...(body === undefined ? {} : { body }),
  });
}

describe('creates are forwarded with the token swapped and the body unchanged', () => {
  test.each([
    [
      'alpha',
      'shared',
      '/v1/images/generations',
      '{"input":{"positivePrompt":"a red fox"},"seed":9223372036854775807,"samples":2}',
    ],
    ['beta', 'research', '/v1/videos/generations', '{"duration":5,"dimensions":{"width":640,"height":640}}'],
  ] as const)('%s posts to %s', async (tenant, credential, path, body) => {
    // A raw socket, because fetch refuses to send hop-by-hop headers at all.
    const response = await sendRaw(
      harness.url,
      'POST',
      path,
      {
        authorization: `Bearer ${harness.keys[tenant]}`,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'keep-alive': 'timeout=5',
        te: 'trailers',
        trailer: 'x-checksum',
        'proxy-connection': 'keep-alive',
        'x-forwarded-for': '10.0.0.9',
        forwarded: 'for=10.0.0.9',
        cookie: 'session=1',
        'proxy-authorization': 'Basic Zm9vOmJhcg==',
      },
      body,
    );
    expect(response.status).toBe(200);
    const answer = JSON.parse(response.body) as { status: number; data: { requestId: string } };
    expect(answer.status).toBe(200);
    expect(answer.data.requestId).toMatch(/^[0-9a-f-]{36}$/);

    expect(harness.simulator.received).toHaveLength(1);
    const received = harness.simulator.received[0]!;
    expect(received.method).toBe('POST');
    expect(received.url).toBe(path);
    expect(received.body).toEqual(sentWithAssignedRequestId(harness, body));
    expect(received.headers.authorization).toBe(`Bearer ${UPSTREAM_TOKENS[credential]}`);
    expect(JSON.stringify(received.headers)).not.toContain(harness.keys[tenant]);
    const unexpected = Object.keys(received.headers).filter((name) => !FORWARDED_HEADERS.has(name));
    expect(unexpected).toEqual([]);
    expect(response.headers['x-request-id']).toBe(received.headers['x-request-id']);
  });
});

describe('every route of the allowlist', () => {
  test('images: create then get, for alpha', async () => {
    const requestId = randomUUID();
    const created = await call(
      'POST',
      '/v1/images/generations',
      harness.keys.alpha,
      JSON.stringify({ requestId }),
    );
    expect(await created.json()).toEqual({ status: 200, data: { requestId } });
    const polled = await call('GET', `/v1/images/generations/${requestId}`, harness.keys.alpha);
    expect(polled.status).toBe(200);
    const record = (await polled.json()) as { data: { id: string; status: string } };
    expect(record.data.id).toBe(requestId);
    expect(harness.simulator.received.map((r) => `${r.method} ${r.url}`)).toEqual([
      'POST /v1/images/generations',
      `GET /v1/images/generations/${requestId}`,
    ]);
  });

  test('videos: create, get and delete, for beta; an upper-case id reaches the upstream in lower case', async () => {
    const requestId = randomUUID();
    await call(
      'POST',
      '/v1/videos/generations',
      harness.keys.beta,
      JSON.stringify({ requestId, duration: 4 }),
    );
    const polled = await call('GET', `/v1/videos/generations/${requestId.toUpperCase()}`, harness.keys.beta);
    expect(polled.status).toBe(200);
    const deleted = await call('DELETE', `/v1/videos/generations/${requestId}`, harness.keys.beta);
    expect(deleted.status).toBe(200);
    expect(harness.simulator.received.map((r) => `${r.method} ${r.url}`)).toEqual([
      'POST /v1/videos/generations',
      `GET /v1/videos/generations/${requestId}`,
      `DELETE /v1/videos/generations/${requestId}`,
    ]);
  });

  test('account routes of a passthrough tenant reach the upstream; the aliases are marked deprecated', async () => {
    for (const [path, successor] of [
      ['/v1/account/usage', undefined],
      ['/v1/usage', '/v1/account/usage'],
      ['/v1/account/keys', undefined],
      ['/v1/keys', '/v1/account/keys'],
    ] as const) {
      const response = await call('GET', path, harness.keys.beta);
      expect(response.status).toBe(200);
      expect(response.headers.get('deprecation')).toBe(successor === undefined ? null : 'true');
      expect(response.headers.get('link')).toBe(
        successor === undefined ? null : `<${successor}>; rel="successor-version"`,
      );
    }
    expect(harness.simulator.received.map((r) => r.url)).toEqual([
      '/v1/account/usage',
      '/v1/account/usage',
      '/v1/account/keys',
      '/v1/account/keys',
    ]);
  });

  test('account routes of a gateway tenant are answered by gengate and never reach the upstream', async () => {
    const keys = await call('GET', '/v1/account/keys', harness.keys.alpha);
    expect(keys.status).toBe(200);
    const keyList = (await keys.json()) as {
      status: number;
      data: { partialKey: string; name: string | null }[];
    };
    expect(keyList.status).toBe(200);
    expect(keyList.data.map((k) => [k.partialKey, k.name])).toEqual([
      [harness.keys.alpha.slice(0, 8), 'ci'],
      [harness.keys.expired.slice(0, 8), 'old'],
    ]);
    const usage = await call('GET', '/v1/usage', harness.keys.alpha);
    expect(usage.status).toBe(200);
    expect(usage.headers.get('deprecation')).toBe('true');
    expect(harness.simulator.received).toEqual([]);
  });
});

describe('responses', () => {
  test("the upstream's rate-limit headers never reach the tenant", async () => {
    const response = await call('GET', '/v1/account/keys', harness.keys.beta);
    expect(response.status).toBe(200);
    for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
      expect(response.headers.get(name)).toBeNull();
    }
  });

  test('upstream error bodies are passed through unchanged', async () => {
    // The gateway checks dimensions by type only; the service's own (guessed) range refuses 4096.
    const response = await call(
      'POST',
      '/v1/images/generations',
      harness.keys.alpha,
      '{"dimensions":{"width":4096}}',
    );
    expect(harness.simulator.received).toHaveLength(1);
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { param: string } };
    expect(body.error.param).toBe('dimensions.width');
  });

  test('a sane client X-Request-Id is kept and forwarded; an odd one is replaced', async () => {
    const kept = await call('GET', '/v1/account/keys', harness.keys.beta, undefined, {
      'x-request-id': 'trace-42.a:b',
    });
    expect(kept.headers.get('x-request-id')).toBe('trace-42.a:b');
    const replaced = await call('GET', '/v1/account/keys', harness.keys.beta, undefined, {
      'x-request-id': 'a b<script>',
    });
    expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(harness.simulator.received.map((r) => r.headers['x-request-id'])).toEqual([
      'trace-42.a:b',
      replaced.headers.get('x-request-id'),
    ]);
  });

  // Regression: an id that was the caller's own key, or the upstream token, passed as sane, so it was
  // echoed, logged on every line of the request and forwarded to the upstream.
  test('an X-Request-Id that is, or may be, a secret is replaced, never echoed, logged or forwarded', async () => {
    const secrets = [
      harness.keys.beta,
      UPSTREAM_TOKENS.shared,
      UPSTREAM_TOKENS.research,
      'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      // Held inside an id, too.
      `trace-${harness.keys.beta}`,
      `${UPSTREAM_TOKENS.shared}-1`,
    ];
    for (const secret of secrets) {
      const answer = await call('POST', '/v1/images/generations', harness.keys.beta, '{}', {
        'x-request-id': secret,
      });
      expect(answer.status).toBe(200);
      expect(answer.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
    const forwarded = harness.simulator.received.map((r) => r.headers['x-request-id']);
    expect(forwarded).toHaveLength(secrets.length);
    for (const secret of secrets) {
      expect(forwarded).not.toContain(secret);
      expect(harness.logLines.filter((line) => line.includes(secret))).toEqual([]);
    }
  });
});
