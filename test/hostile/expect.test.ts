// `Expect` (docs/security.md#what-gengate-trusts): 100 Continue only once the request is allowed as far as its head, key, route,
// policy for the route, media type and declared size can tell; otherwise the refusal comes first and the
// body is never asked for. Any other expectation: 417 in the envelope, with X-Request-Id, logged and
// counted. Through raw sockets, since fetch neither sends Expect nor shows a 100.
import { once } from 'node:events';
import { connect } from 'node:net';
import { describe, expect, test } from 'vitest';
import { useGatewayHarness } from '../support/gateway-harness.ts';
import { exchangeRaw } from '../support/raw-exchange.ts';

const IMAGES = '/v1/images/generations';
const VIDEOS = '/v1/videos/generations';
const BODY = '{"samples":1}';

// Alpha: no video, and 2 requests a minute (one every 30 s).
const harness = useGatewayHarness({
  alphaPolicyYaml: '{ video: { enabled: false } }',
  alphaLimitsYaml: "[{ id: requests, routes: ['*'], cost: requests, limit: 2, windowSeconds: 60 }]",
});

function head(path: string, headers: Record<string, string>, length = BODY.length): string {
  const { host } = new URL(harness.url);
  const lines = [`POST ${path} HTTP/1.1`, `Host: ${host}`, `Content-Length: ${length}`];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}

const JSON_BODY = { 'content-type': 'application/json' };
type Caller = 'alpha' | 'gamma' | 'a wrong key' | 'no key';
function keyOf(caller: Caller): Record<string, string> {
  if (caller === 'no key') return {};
  return { authorization: `Bearer ${caller === 'a wrong key' ? 'ggk_wrong' : harness.keys[caller]}` };
}

describe('Expect: 100-continue', () => {
  test('an allowed request is asked for its body, then served', async () => {
    const { hostname, port } = new URL(harness.url);
    const socket = connect(Number(port), hostname);
    socket.write(head(IMAGES, { ...keyOf('gamma'), ...JSON_BODY, expect: '100-continue' }));
    let received = '';
    const until = async (part: string) => {
      while (!received.includes(part)) {
        const [chunk] = (await once(socket, 'data')) as [Buffer];
        received += chunk.toString('latin1');
      }
    };
    await until('\r\n\r\n');
    expect(received).toBe('HTTP/1.1 100 Continue\r\n\r\n');
    expect(harness.simulator.received).toEqual([]);
    socket.write(BODY);
    await until('"requestId"');
    socket.destroy();
    expect(received.slice('HTTP/1.1 100 Continue\r\n\r\n'.length)).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(harness.simulator.received).toHaveLength(1);
  });

  test.each([
    ['a wrong key', IMAGES, 'a wrong key', JSON_BODY, BODY.length, 401, 'invalid_api_key'],
    ['no key', IMAGES, 'no key', JSON_BODY, BODY.length, 401, 'missing_api_key'],
    ['video off for the tenant', VIDEOS, 'alpha', JSON_BODY, BODY.length, 403, 'policy_violation'],
    [
      'another media type',
      IMAGES,
      'gamma',
      { 'content-type': 'text/plain' },
      BODY.length,
      415,
      'unsupported_media_type',
    ],
    ['a body beyond the limit', IMAGES, 'gamma', JSON_BODY, 10485761, 413, 'payload_too_large'],
    ['an unknown route', '/v1/nothing', 'gamma', JSON_BODY, BODY.length, 404, 'route_not_found'],
  ] as const)(
    '%s: the refusal, without 100 Continue',
    async (_name, path, caller, type, length, status, code) => {
      const headers = { ...keyOf(caller), ...type };
      // Only the head is sent: a gateway that asked for the body would wait for it and never answer. It
      // closes the connection after the refusal, whose body the client may still send.
      const { answers, closedByGateway } = await exchangeRaw(
        harness.url,
        head(path, { ...headers, expect: '100-continue' }, length),
      );
      expect(closedByGateway).toBe(true);
      expect(answers).toHaveLength(1);
      expect(answers[0]?.status).toBe(status);
      expect(JSON.parse(answers[0]?.body ?? '')).toMatchObject({ status, error: { code } });
      expect(harness.simulator.received).toEqual([]);
    },
  );
});

test('a limit without room for the smallest request: 429 before the body, nothing charged', async () => {
  const startedMs = Date.now();
  for (let index = 0; index < 2; index += 1) {
    const { answers } = await exchangeRaw(
      harness.url,
      `${head(IMAGES, { ...keyOf('alpha'), ...JSON_BODY })}${BODY}`,
      {
        answers: 1,
      },
    );
    expect(answers[0]?.status).toBe(200);
  }
  const { answers, closedByGateway } = await exchangeRaw(
    harness.url,
    head(IMAGES, { ...keyOf('alpha'), ...JSON_BODY, expect: '100-continue' }),
  );
  expect(closedByGateway).toBe(true);
  expect(answers).toHaveLength(1);
  const [refusal] = answers;
  expect(refusal?.status).toBe(429);
  expect(JSON.parse(refusal?.body ?? '')).toMatchObject({ error: { code: 'rate_limited' } });
  // One request's share of the window, from the store's clock: 30 s, less the whole seconds since the
  // first charge.
  const elapsedSeconds = Math.ceil((Date.now() - startedMs) / 1000);
  expect(Number(refusal?.headers['retry-after'])).toBeGreaterThanOrEqual(30 - elapsedSeconds);
  expect(Number(refusal?.headers['retry-after'])).toBeLessThanOrEqual(30);
  expect(refusal?.headers['x-ratelimit-remaining']).toBe('0');
  expect(harness.simulator.received).toHaveLength(2);
});

describe('any other expectation', () => {
  test.each([['100-continue-please'], ['100-continue, foo'], ['none']])(
    'Expect: %j: 417 in the envelope',
    async (value) => {
      const { answers } = await exchangeRaw(
        harness.url,
        `${head(IMAGES, { ...keyOf('gamma'), ...JSON_BODY, expect: value, 'x-request-id': 'expect-417' })}${BODY}`,
        { answers: 1 },
      );
      expect(answers[0]?.status).toBe(417);
      expect(JSON.parse(answers[0]?.body ?? '')).toEqual({
        status: 417,
        error: {
          code: 'expectation_failed',
          type: 'validation_error',
          message: 'the only expectation this gateway meets is 100-continue',
        },
      });
      expect(answers[0]?.headers['x-request-id']).toBe('expect-417');
      expect(harness.simulator.received).toEqual([]);
    },
  );

  test('logged and counted', async () => {
    const lines = harness.logLines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.msg === 'request' && line.reqId === 'expect-417');
    expect(lines).toHaveLength(3);
    expect(lines.every((line) => line.status === 417)).toBe(true);
    const metric = await harness.metrics.registry.getSingleMetric('gengate_http_requests_total')?.get();
    const counted = metric?.values.filter(({ labels }) => labels.status === '417');
    expect(counted?.reduce((sum, { value }) => sum + value, 0)).toBe(3);
  });
});
